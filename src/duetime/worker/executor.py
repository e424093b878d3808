"""Running one claimed task: decode its record, let its trigger run it, return the Outcome.

The executor knows no kind of trigger. It offers each run a :class:`Job` (the seam in
:mod:`duetime.triggers.base`): the handler's call, under the type's time limit, and the
retry policy; the record's trigger (or, without one, :func:`~duetime.triggers.once.run_once`)
decides what runs and what follows.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import traceback
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor as ThreadPool
from typing import TYPE_CHECKING, Any

from duetime.clock import Clock, from_ms
from duetime.context import Context
from duetime.errors import SchemaError, ValidationError
from duetime.events import EventKind, Events, WorkerEvent
from duetime.record import Record, check_claimed
from duetime.stores.base import Claim, Outcome, done
from duetime.tasktype import TaskType
from duetime.triggers.base import Follow, Next, Trigger
from duetime.triggers.once import run_once
from duetime.worker import outcome
from duetime.worker.run import Run

if TYPE_CHECKING:
    from duetime.client import Client

log = logging.getLogger(__name__)

_new_tuple = tuple.__new__


#: How much of a traceback a dead letter's reason keeps.
MAX_TRACE_CHARS = 4000


class _TimedOut(Exception):
    pass


def _shown(text: str) -> str:
    """Text as a log line can carry it (bytes that are not UTF-8 as escapes)."""
    return text.encode("utf-8", "backslashreplace").decode()


class Executor:
    """Runs claims of task types; plain ``def`` handlers go to ``pool``.

    Args:
        clock: the store's clock.
        max_payload_bytes: the largest payload a reschedule hook may leave.
        pool: the threads of plain ``def`` handlers (None when every handler is async).
        events: the worker's listeners.
        app: handed to handlers in their :class:`~duetime.model.Context`, and used for
            nothing else.
    """

    def __init__(
        self,
        *,
        clock: Clock,
        max_payload_bytes: int,
        pool: ThreadPool | None,
        events: Events,
        app: Client,
    ) -> None:
        self.clock = clock
        self.max_payload_bytes = max_payload_bytes
        self.pool = pool
        self.events = events
        self.app = app
        # Handlers are timed only for a listener that wants it, and their start noted (one
        # clock read) only for a listener of finished runs (the minute counter).
        self.timed = any(events.wants(k) for k in ("started", "succeeded", "failed"))
        self.marks = events.wants("finished")

    async def run(self, task_type: TaskType, time_limit: float | None, run: Run) -> Outcome:
        """Run one claim and return its outcome; never raises but CancelledError (cut short).

        What the store holds for the task is judged here, per task: data that cannot be
        used sends it alone to the dead letters with the reason. So does a failure of
        duetime's own code while it runs the task, logged with its traceback.
        """
        claim = run.claim
        try:
            check_claimed(claim)
        except SchemaError as exc:
            return self._corrupt(task_type.name, claim, "corrupt task", exc)
        try:
            record = Record.decode(claim.record)
        except SchemaError as exc:
            return self._corrupt(task_type.name, claim, "corrupt record", exc)
        trigger = record.trigger
        try:
            if trigger is None and not self.timed:
                # A task without a trigger, when no listener wants its per-task events: the
                # common case and the hot path. What run_once does with a Job, inline (no
                # coroutine of its own), without a Job unless the handler fails.
                occurrence = claim.due_ms if record.occurrence_ms is None else record.occurrence_ms
                ctx = _context(self, task_type, claim, record, occurrence)
                if self.marks:
                    run.fired_ms = self.clock.now()
                try:
                    await self.call_handler(task_type, time_limit, record.payload, ctx)
                except Exception as exc:
                    job = _Job(self, task_type, time_limit, run, record)
                    job.context = ctx
                    return await job.failed(exc, occurrence, None, None)
                return done(claim)
            job = _Job(self, task_type, time_limit, run, record)
            if trigger is None:
                return await run_once(job)
            return await trigger.run(job)
        except SchemaError as exc:  # a trigger found its state unusable as it ran
            return self._corrupt(task_type.name, claim, "corrupt record", exc)
        except Exception as exc:
            log.exception(
                "%s/%s: duetime failed while running it; sent to the dead letters",
                task_type.name,
                _shown(claim.id),
            )
            trace = "".join(traceback.format_exception(exc, limit=-8))[-MAX_TRACE_CHARS:]
            reason = f"internal error: {outcome.describe(exc)}\n{trace}"
            return self._dead(task_type.name, claim, outcome.safe_text(reason))

    def _corrupt(self, task_type: str, claim: Claim, what: str, exc: SchemaError) -> Outcome:
        log.error("%s/%s: %s, sent to the dead letters: %s", task_type, _shown(claim.id), what, exc)
        return self._dead(task_type, claim, f"{what}: {exc}")

    def _dead(self, task_type: str, claim: Claim, reason: str) -> Outcome:
        """The task to the dead letters as the store holds it, with ``reason``."""
        if self.events.wants("dead_lettered"):
            event = WorkerEvent("dead_lettered", task_type, claim.id, claim.due_ms, error=reason)
            self.events.emit(event)
        return Outcome("dead", claim, None, claim.record, reason)

    def call_handler(
        self, task_type: TaskType, time_limit: float | None, payload: dict[str, Any], ctx: Context
    ) -> Awaitable[object]:
        """The handler's call, within ``time_limit`` seconds; awaiting it raises what the
        handler raised, or _TimedOut.

        An async handler without a time limit is awaited as it is: no wrapping coroutine on
        the path every such task takes.
        """
        handler = task_type.handler
        assert handler is not None
        args = task_type.args(payload, ctx)
        if task_type.is_async and time_limit is None:
            call: Awaitable[object] = handler(*args)
            return call
        return self._call_limited(handler, task_type.is_async, time_limit, args)

    async def _call_limited(
        self,
        handler: Callable[..., Any],
        is_async: bool,
        time_limit: float | None,
        args: tuple[Any, ...],
    ) -> object:
        if is_async:
            async with asyncio.timeout(time_limit) as scope:
                try:
                    return await handler(*args)
                except asyncio.CancelledError:
                    if scope.expired():
                        raise _TimedOut(f"timed out after {time_limit:g} s") from None
                    raise
        future = asyncio.get_running_loop().run_in_executor(
            self.pool, functools.partial(handler, *args)
        )
        try:
            return await asyncio.wait_for(future, time_limit)
        except TimeoutError:
            if not future.done() or future.cancelled():
                raise _TimedOut(f"timed out after {time_limit:g} s (its thread runs on)") from None
            raise


def _context(
    executor: Executor, task_type: TaskType, claim: Claim, record: Record, occurrence_ms: int
) -> Context:
    """What a handler is told about its run (made with tuple.__new__: a named tuple's own
    constructor costs twice as much, on every task's path)."""
    return _new_tuple(
        Context,
        (
            task_type.name,
            claim.id,
            from_ms(occurrence_ms),
            outcome.attempt(claim, record),
            outcome.occurrence_id(claim.id, occurrence_ms),
            claim.token,
            executor.app,
        ),
    )


class _Job:
    """One claim being run: the :class:`~duetime.triggers.base.Job` a trigger works with."""

    __slots__ = (
        "_executor",
        "_run",
        "_time_limit",
        "claim",
        "context",
        "occurrence_ms",
        "record",
        "result",
        "task_type",
    )

    def __init__(
        self,
        executor: Executor,
        task_type: TaskType,
        time_limit: float | None,
        run: Run,
        record: Record,
    ) -> None:
        self._executor = executor
        self._run = run
        self._time_limit = time_limit
        self.task_type = task_type
        self.claim = run.claim
        self.record = record
        occurrence = record.occurrence_ms
        self.occurrence_ms = run.claim.due_ms if occurrence is None else occurrence
        self.context: Context | None = None
        self.result: object = None

    # What the Job protocol reads of the claim, derived when a trigger asks (most never do).

    @property
    def task_name(self) -> str:
        return self.task_type.name

    @property
    def payload_json(self) -> str:
        return self.record.payload_json

    @property
    def payload(self) -> dict[str, Any]:
        return self.record.payload

    @property
    def failures(self) -> int:
        return self.record.failures

    @property
    def has_hook(self) -> bool:
        return self.task_type.hook is not None

    @property
    def max_payload_bytes(self) -> int:
        return self._executor.max_payload_bytes

    def now_ms(self) -> int:
        return self._executor.clock.now_ms()

    def _event(self, kind: EventKind, due_ms: int | None = None, **fields: Any) -> None:
        events = self._executor.events
        if events.wants(kind):
            claim = self.claim
            due = claim.due_ms if due_ms is None else due_ms
            attempt = outcome.attempt(claim, self.record)
            events.emit(WorkerEvent(kind, self.task_name, claim.id, due, attempt, **fields))

    async def call(self, occurrence_ms: int) -> Exception | None:
        executor, claim = self._executor, self.claim
        ctx = self.context = _context(executor, self.task_type, claim, self.record, occurrence_ms)
        if executor.marks:
            self._run.fired_ms = executor.clock.now()
        timed = executor.timed
        if timed:
            self._event("started", lateness_ms=executor.clock.now() - claim.due_ms)
            began = time.monotonic()
        try:
            self.result = await executor.call_handler(
                self.task_type, self._time_limit, self.record.payload, ctx
            )
        except Exception as exc:
            if timed:
                took = (time.monotonic() - began) * 1000
                self._event("failed", duration_ms=took, error=outcome.describe(exc))
            return exc
        if timed:
            self._event("succeeded", duration_ms=(time.monotonic() - began) * 1000)
        return None

    async def ask_hook(self, payload: dict[str, Any]) -> object:
        return await self.task_type.ask_hook(payload, self.context)

    def done(self, following: Next | None = None, *, hand_off_ms: int | None = None) -> Outcome:
        spawn = None
        if hand_off_ms is not None:
            spawn = outcome.hand_off(self.claim, self.record, hand_off_ms, self.now_ms())
        return outcome.success(self.claim, following, spawn)

    async def failed(
        self, error: Exception, occurrence_ms: int, state: Trigger | None, follow: Follow | None
    ) -> Outcome:
        claim, record, policy = self.claim, self.record, self.task_type.policy
        failures = record.failures + 1
        text = outcome.describe(error)
        attempt = outcome.attempt(claim, record)
        if outcome.retries_left(error, policy, failures):
            now = self.now_ms()
            try:
                due = outcome.retry_due(error, policy, failures, now)
            except ValidationError as exc:
                log.warning("%s/%s: %s; the back-off applies", self.task_name, claim.id, exc)
                due = now + policy.backoff.delay_ms(failures)
            log.info(
                "%s/%s attempt %d failed (%s); retry at %d",
                self.task_name,
                claim.id,
                attempt,
                text,
                due,
            )
            self._event("retried", due, error=text)
            return outcome.retry(claim, record, occurrence_ms, state, failures, due, text)
        log.warning(
            "%s/%s attempt %d failed (%s); sent to the dead letters",
            self.task_name,
            claim.id,
            attempt,
            text,
        )
        self._event("dead_lettered", error=text)
        following = None if follow is None else await follow()
        series = follow is not None
        return outcome.given_up(
            claim, record, occurrence_ms, failures, text, series=series, following=following
        )

    def tell(self, kind: EventKind, **fields: Any) -> None:
        events = self._executor.events
        if events.wants(kind):
            claim = self.claim
            events.emit(WorkerEvent(kind, self.task_name, claim.id, claim.due_ms, **fields))

    def missed_ticks(self, latest_ms: int, count: int) -> None:
        events = self._executor.events
        if events.wants("missed_ticks"):
            name, task_id = self.task_name, self.claim.id
            events.emit(WorkerEvent("missed_ticks", name, task_id, latest_ms, count=count))
