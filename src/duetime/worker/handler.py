"""Calling a task type's handler: an ``async def`` in the event loop, a plain ``def`` in a
thread of the worker's pool, each within the type's time limit (and inside its middleware,
if it has any: :mod:`.wrapped`)."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor as ThreadPool
from typing import Any

from duetime.context import Context
from duetime.tasktype import TaskType
from duetime.worker.wrapped import Chain, through


class TimedOut(Exception):
    """A handler ran past its type's time limit."""


def call_handler(
    task_type: TaskType,
    time_limit: float | None,
    payload: dict[str, Any],
    ctx: Context | None,
    pool: ThreadPool | None,
    chain: Chain = (),
) -> Awaitable[object]:
    """The handler's call, within ``time_limit`` seconds (``ctx`` is None for a handler
    that takes none and a type without middleware); awaiting it raises what the handler
    raised, or :class:`TimedOut`, or TypeError when a plain ``def`` handler returned a
    coroutine. With a ``chain``, the call inside it, the time limit around the whole.

    An async handler without a time limit is awaited as it is: no wrapping coroutine on
    the path every such task takes.
    """
    handler = task_type.handler
    assert handler is not None
    args = task_type.args(payload, ctx)
    if chain:
        assert ctx is not None  # a type with middleware always has its Context made
        return _call_wrapped(task_type, chain, ctx, time_limit, args, pool)
    if task_type.is_async and time_limit is None:
        call: Awaitable[object] = handler(*args)
        return call
    if task_type.is_async:
        return timed_call(handler, time_limit, args)
    return _call_in_thread(pool, handler, time_limit, args)


async def timed_call(
    handler: Callable[..., Any], time_limit: float | None, args: tuple[Any, ...], note: str = ""
) -> object:
    """An ``async def`` handler's call within ``time_limit`` seconds: raises
    :class:`TimedOut` past it (its message ending with ``note``)."""
    async with asyncio.timeout(time_limit) as scope:
        try:
            return await handler(*args)
        except asyncio.CancelledError as cut:
            if scope.expired():
                # With the cancellation's traceback: where the handler was waiting.
                timed_out = TimedOut(f"timed out after {time_limit:g} s{note}")
                raise timed_out.with_traceback(cut.__traceback__) from None
            raise


def _call_wrapped(
    task_type: TaskType,
    chain: Chain,
    ctx: Context,
    time_limit: float | None,
    args: tuple[Any, ...],
    pool: ThreadPool | None,
) -> Awaitable[object]:
    """The handler's call inside ``chain``: a plain ``def`` handler's call in its thread is
    the innermost step, awaited in the event loop like an async handler's."""
    handler = task_type.handler
    assert handler is not None
    if task_type.is_async:

        def innermost() -> Awaitable[object]:
            call: Awaitable[object] = handler(*args)
            return call

        return timed_call(through, time_limit, (chain, ctx, innermost))

    def in_thread() -> Awaitable[object]:
        # In the middleware's context (its contextvars: a span it made current, say).
        context = contextvars.copy_context()
        return _call_in_thread(pool, handler, None, args, context)

    return timed_call(through, time_limit, (chain, ctx, in_thread), " (its thread runs on)")


async def _call_in_thread(
    pool: ThreadPool | None,
    handler: Callable[..., Any],
    time_limit: float | None,
    args: tuple[Any, ...],
    context: contextvars.Context | None = None,
) -> object:
    call = functools.partial(handler, *args)
    if context is not None:
        call = functools.partial(context.run, handler, *args)
    future = asyncio.get_running_loop().run_in_executor(pool, call)
    try:
        result = await asyncio.wait_for(future, time_limit)
    except TimeoutError:
        if not future.done() or future.cancelled():
            raise TimedOut(f"timed out after {time_limit:g} s (its thread runs on)") from None
        raise
    if result is not None and inspect.isawaitable(result):
        _refuse_awaitable(handler, result)
    return result


def _refuse_awaitable(handler: Callable[..., Any], result: object) -> None:
    """A plain ``def`` handler returned a coroutine (or another awaitable) that nothing will
    await: close it (no "never awaited" warning) and fail the attempt, naming the handler."""
    close = getattr(result, "close", None)
    if callable(close):
        close()
    name = getattr(handler, "__qualname__", None) or repr(handler)
    kind = "a coroutine" if inspect.iscoroutine(result) else "an awaitable"
    raise TypeError(
        f"handler {name} returned {kind}: declare it `async def` (a plain def handler runs in "
        "a thread, and what it returns is not awaited)"
    )
