"""A handler's call inside its task type's middleware (:mod:`duetime.middleware`): the
chain, outermost first, each given the run's Context and the call of the next.

Only the runs of a type with middleware come here; the others never see it (and a type
with middleware does not take the hot path, :mod:`.hot`).
"""

from __future__ import annotations

from collections.abc import Sequence

from duetime.context import Context
from duetime.middleware import CallNext, MiddlewareLike

#: The middleware of one task type in a worker, outermost first: the App's, then its own.
Chain = tuple[MiddlewareLike, ...]


def chain_of(app_middleware: Sequence[MiddlewareLike], own: Sequence[MiddlewareLike]) -> Chain:
    """A type's chain: the App's middleware around the type's own."""
    return (*app_middleware, *own)


async def through(chain: Chain, ctx: Context, innermost: CallNext) -> object:
    """``innermost()`` (the handler's call) awaited inside ``chain``: what the outermost
    middleware returns, or raises."""
    return await _Step(chain, 0, ctx, innermost)()


class _Step:
    """The ``call_next`` given to the middleware before ``chain[index]`` (or the handler's
    call, past the last): it may be called once."""

    __slots__ = ("_called", "_chain", "_ctx", "_index", "_innermost")

    def __init__(self, chain: Chain, index: int, ctx: Context, innermost: CallNext) -> None:
        self._chain, self._index, self._ctx, self._innermost = chain, index, ctx, innermost
        self._called = False

    async def __call__(self) -> object:
        if self._called:  # a handler run twice would do its side effects twice
            who = self._chain[self._index - 1] if self._index else "the worker"
            raise RuntimeError(f"call_next was called twice by {who!r}")
        self._called = True
        chain, index = self._chain, self._index
        if index == len(chain):
            return await self._innermost()
        step = _Step(chain, index + 1, self._ctx, self._innermost)
        return await chain[index](self._ctx, step)
