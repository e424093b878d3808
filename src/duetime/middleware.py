"""Middleware: code that wraps every run of a task type's handler (a tenant's database, a
span, a timer), given on the App and per type; the worker's side of it is
:mod:`duetime.worker.wrapped`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from duetime.context import Context
from duetime.errors import ValidationError

#: What a middleware is given to go on with the run: the next middleware's call, or the
#: handler's; awaiting it gives what the handler returned and raises what it raised.
CallNext = Callable[[], Awaitable[Any]]
#: A middleware: a :class:`Middleware`, or any async callable taking ``(ctx, call_next)``.
MiddlewareLike = Callable[[Context, CallNext], Awaitable[Any]]


class Middleware:
    """Wraps each run of a handler: subclass it and override :meth:`__call__`.

    The App's middleware (``App(url, middleware=[...])``, the first given outermost) wraps
    the type's own (``@app.task(..., middleware=[...])``), which wraps the handler. What a
    middleware returns is the run's result, and what it raises is the run's failure
    (retried, dead-lettered, :class:`~duetime.Retry`, :class:`~duetime.RateLimited` and
    :class:`~duetime.Abort` honoured); one that returns without calling ``call_next``
    skips the handler, and the run counts as done. It runs in the worker's event loop, also
    around a plain ``def`` handler's call in its thread. The type's time limit and an
    abort cut through it (it sees a :class:`asyncio.CancelledError`: let it through).

    The base class's own call only goes on: ``return await call_next()``.
    """

    async def __call__(self, ctx: Context, call_next: CallNext) -> Any:
        """Run the rest of the chain (``await call_next()``, at most once) or skip it.

        Args:
            ctx: the run's :class:`~duetime.Context`.
            call_next: the next middleware's call, or the handler's.

        Returns:
            The run's result: usually what ``call_next`` returned.
        """
        return await call_next()

    def producing(self, meta: dict[str, Any] | None) -> dict[str, Any] | None:
        """What an App with this middleware adds to a task's metadata as it is scheduled
        (``schedule``, ``submit``, ``schedule_many``): ``meta`` as given (None for none),
        changed or not. The base class adds nothing, and a middleware that does not
        override it is not asked."""
        return meta


def check_middleware(given: object, option: str = "middleware") -> tuple[MiddlewareLike, ...]:
    """``given`` (a list of middleware, or None) as a chain, outermost first.

    Raises:
        ValidationError: not a list, or an item that is no async callable of
            ``(ctx, call_next)`` (naming it: ``middleware[1]``).
    """
    from duetime.tasktype import is_async_callable, positional_arity

    if given is None:
        return ()
    if isinstance(given, str | bytes | dict) or not isinstance(given, Iterable):
        raise ValidationError(option, "must be a list of duetime.Middleware")
    chain = tuple(given)
    for n, item in enumerate(chain):
        if isinstance(item, type):
            raise ValidationError(f"{option}[{n}]", f"must be an instance, not the class {item!r}")
        try:
            takes = callable(item) and positional_arity(item) >= 2
        except (TypeError, ValueError):  # no signature to read
            takes = False
        if not (takes and is_async_callable(item)):
            raise ValidationError(
                f"{option}[{n}]",
                "must be a duetime.Middleware or an async callable taking (ctx, call_next)",
            )
    return chain
