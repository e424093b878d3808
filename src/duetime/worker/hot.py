"""The hot path: how the runs of one task type begin, in the task and the context of the
batch that begins them (:mod:`.eager`).

A one-off task's first attempt (its record ``{"p":<payload>}``) run by an ``async def``
handler, when no listener wants per-task events, is the run a busy worker makes most. Its
handler is called here and then, and its outcome returned when the handler finishes
without waiting: no coroutine of duetime's own, no :class:`~duetime.record.Record`, no
Job. A handler that waits goes on in :func:`_goes_on`, one that fails through the
executor's failure path; any other claim is the executor's ``run``. What is looked up per
type (the handler, how it is called, whether a note is kept) is looked up once, when the
worker starts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from types import CoroutineType
from typing import TYPE_CHECKING, Any

from duetime.clock import MAX_MS, MIN_MS
from duetime.context import Context
from duetime.errors import Abort
from duetime.record import PAYLOAD, Record, plain_payload
from duetime.stores.base import Outcome, done
from duetime.tasktype import TaskType
from duetime.worker.eager import resume
from duetime.worker.handler import timed_call
from duetime.worker.job import handler_context
from duetime.worker.notes import done_run
from duetime.worker.results import kept
from duetime.worker.run import Run

if TYPE_CHECKING:
    from duetime.worker.executor import Executor

#: Begins one run of a type: its outcome if it finished, else what goes on with it.
Begin = Callable[[Run], "Outcome | Awaitable[Outcome]"]


def beginner(executor: Executor, task_type: TaskType, time_limit: float | None) -> Begin:
    """How the runs of ``task_type`` begin: the hot path where the type can take it, else
    the executor's ``run``."""
    general = executor.run

    def begin_general(run: Run) -> Awaitable[Outcome]:
        return general(task_type, time_limit, run)

    if task_type.handler is None or not executor.eager or not task_type.is_async:
        return begin_general
    if task_type.name in executor.chains:  # its middleware is called the general way
        return begin_general
    return _hot(executor, task_type, time_limit, _caller(task_type, time_limit))


#: Calls a run's handler with its payload and its Context (None for a handler that takes
#: none): the call, not started.
Caller = Callable[[dict[str, Any], Context | None], Coroutine[Any, Any, object]]


def _caller(task_type: TaskType, time_limit: float | None) -> Caller:
    """How a type's handler is called on the hot path."""
    handler, args = task_type.handler, task_type.args
    assert handler is not None

    def call_of(payload: dict[str, Any], ctx: Context | None) -> Coroutine[Any, Any, object]:
        given = args(payload, ctx)
        call = handler(*given) if time_limit is None else timed_call(handler, time_limit, given)
        return call if type(call) is CoroutineType else _awaited(call)

    if task_type.mode != "payload" or time_limit is not None:
        return call_of

    def payload_only(payload: dict[str, Any], ctx: Context | None) -> Coroutine[Any, Any, object]:
        call = handler(payload)
        return call if type(call) is CoroutineType else _awaited(call)

    return payload_only


def _hot(
    executor: Executor, task_type: TaskType, time_limit: float | None, call_of: Caller
) -> Begin:
    """The hot path's begin for one type."""
    general, now, app = executor.run, executor.clock.now, executor.app
    noted, takes_ctx = task_type.name in executor.noted, task_type.takes_ctx

    def begin(run: Run) -> Outcome | Awaitable[Outcome]:
        claim = run.claim
        task_id, _, stalls, due, text, _ = claim
        if stalls or run.aborted is not None:
            return general(task_type, time_limit, run)
        payload = plain_payload(text)
        if payload is None or not task_id.isascii() or not MIN_MS <= due <= MAX_MS:
            return general(task_type, time_limit, run)  # decoded and judged the long way
        ctx = None
        if takes_ctx:
            try:
                ctx = handler_context(app, task_type, claim, 1, due)  # a first attempt
            except Exception as exc:
                record = Record(text[PAYLOAD], _payload=payload)
                return executor.internal(task_type.name, claim, record, exc, run)
        run.fired_ms = now()  # (for the minute counter and the history)
        try:
            call = call_of(payload, ctx)
            waiting = call.send(None)
        except StopIteration as returned:
            if noted:  # with the run's note, for the history: its first attempt
                if returned.value is None:  # no result: the note as it always was
                    return done_run(claim, run.fired_ms, int(now()), 1, due)
                try:
                    run.result = kept(returned.value)  # a result, kept with the run
                except Abort as exc:
                    return _failure(executor, task_type, time_limit, run, payload, ctx, exc)
                return done_run(claim, run.fired_ms, int(now()), 1, due, 0, run.result)
            return done(claim)
        except asyncio.CancelledError:  # its handler raised it: handed back, as if cut short
            return Outcome("release", claim, due)
        except Exception as exc:
            return _failure(executor, task_type, time_limit, run, payload, ctx, exc)
        return _goes_on(executor, task_type, time_limit, run, call, waiting, payload, ctx)

    return begin


async def _goes_on(
    executor: Executor,
    task_type: TaskType,
    time_limit: float | None,
    run: Run,
    call: Coroutine[Any, Any, object],
    waiting: object,
    payload: dict[str, Any],
    ctx: Context | None,
) -> Outcome:
    """A hot-path run whose handler waits: the rest of its call, then its outcome."""
    try:
        value = await resume(call, waiting)
        if value is not None and task_type.name in executor.noted:
            run.result = kept(value)  # a result, kept with the run
    except Exception as exc:
        return await _failure(executor, task_type, time_limit, run, payload, ctx, exc)
    if run.aborted is not None:
        return await _failure(executor, task_type, time_limit, run, payload, ctx)
    return executor.done(task_type, run, 1, run.claim.due_ms)


async def _failure(
    executor: Executor,
    task_type: TaskType,
    time_limit: float | None,
    run: Run,
    payload: dict[str, Any],
    ctx: Context | None,
    error: Exception | None = None,
) -> Outcome:
    """The outcome of a hot-path run whose handler raised ``error`` (or that is being
    aborted), through the executor's failure path of a task without a trigger: its record
    as stored, with the payload its handler was given."""
    claim = run.claim
    record = Record(claim.record[PAYLOAD], _payload=payload)
    try:
        return await executor.failed(
            task_type, time_limit, run, record, claim.due_ms, 1, ctx, error
        )
    except Exception as exc:
        return executor.internal(task_type.name, claim, record, exc, run)


async def _awaited(call: Awaitable[object]) -> object:
    return await call
