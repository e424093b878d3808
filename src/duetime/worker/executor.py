"""Running one claimed task: decode its record, let its trigger run it, return the Outcome.

The executor knows no kind of trigger. It offers each run a :class:`Job` (the seam in
:mod:`duetime.triggers.base`): the handler's call, under the type's time limit, and the
retry policy; the record's trigger (or, without one, :func:`~duetime.triggers.once.run_once`)
decides what runs and what follows.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Collection
from concurrent.futures import Executor as ThreadPool
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from duetime.clock import Clock, from_ms, iso
from duetime.context import Context
from duetime.errors import RateLimited, SchemaError, ValidationError
from duetime.events import EventKind, Events, WorkerEvent
from duetime.record import Record, check_claimed
from duetime.stores.base import Claim, Outcome, done
from duetime.tasktype import TaskType
from duetime.triggers.base import Follow, Next, Trigger
from duetime.triggers.once import run_once
from duetime.worker import outcome
from duetime.worker.handler import call_handler
from duetime.worker.notes import done_run
from duetime.worker.run import AbortedRun, Run, abort_later, aborted_error, ended

if TYPE_CHECKING:
    from duetime.client import Client

log = logging.getLogger(__name__)

#: Runs one claim and returns its outcome.
RunClaim = Callable[[TaskType, float | None, Run], Awaitable[Outcome]]

_new_tuple = tuple.__new__


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
        grace: seconds an aborted ``async def`` handler gets to clean up before it is
            cancelled again (the worker's grace).
        noting: the task types whose runs the run history keeps (:mod:`.notes`).
    """

    def __init__(
        self,
        *,
        clock: Clock,
        max_payload_bytes: int,
        pool: ThreadPool | None,
        events: Events,
        app: Client,
        grace: float = 30.0,
        noting: Collection[str] = (),
    ) -> None:
        self.clock = clock
        self.grace = grace
        self.max_payload_bytes = max_payload_bytes
        self.pool = pool
        self.events = events
        self.app = app
        # Handlers are timed only for a listener that wants it, and their start noted (one
        # clock read, with the occurrence and attempt) only for a listener of finished runs
        # (the minute counter) or a run history (``noting``).
        self.timed = any(events.wants(k) for k in ("started", "succeeded", "failed"))
        self.noted = frozenset(noting)
        self.marks = bool(noting) or events.wants("finished")
        #: Run one claim and return its outcome (see :meth:`_run`); with DEBUG logging (as
        #: the worker starts), a line for each run too. Chosen once: no cost per task.
        self.run: RunClaim = self._run_logged if log.isEnabledFor(logging.DEBUG) else self._run

    async def _run_logged(self, task_type: TaskType, time_limit: float | None, run: Run) -> Outcome:
        began = time.monotonic()
        claim = run.claim
        result = await self._run(task_type, time_limit, run)
        log.debug(
            "%s/%s attempt %d: %s in %.1f ms",
            task_type.name,
            _shown(claim.id),
            _attempt(claim),
            _finished(result),
            (time.monotonic() - began) * 1000,
        )
        return result

    async def _run(self, task_type: TaskType, time_limit: float | None, run: Run) -> Outcome:
        """Run one claim and return its outcome; never raises but CancelledError (cut short).

        What the store holds for the task is judged here, per task: data that cannot be
        used sends it alone to the dead letters with the reason. So does a failure of
        duetime's own code while it runs the task, logged with its traceback, which the
        dead letter keeps.
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
            if trigger is None and not self.timed and run.aborted is None:
                # A task without a trigger, when no listener wants its per-task events: the
                # common case and the hot path. What run_once does with a Job, inline (no
                # coroutine of its own), without a Job unless the handler fails.
                occurrence = claim.due_ms if record.occurrence_ms is None else record.occurrence_ms
                ctx, unique = _context(self, task_type, claim, record, occurrence), record.unique_ms
                if self.marks:
                    run.fired_ms = self.clock.now()
                error: Exception | None = None
                try:
                    await call_handler(task_type, time_limit, record.payload, ctx, self.pool)
                    if run.aborted is None:
                        if task_type.name in self.noted:  # its note (ctx[3]: the attempt)
                            ended_ms, fired = int(self.clock.now()), run.fired_ms
                            return done_run(claim, fired, ended_ms, ctx[3], occurrence, unique)
                        return done(claim, unique)
                except Exception as exc:
                    error = exc
                run.occurrence_ms, run.attempt = occurrence, ctx[3]  # for the history's note
                failure = ended(run, error)
                assert failure is not None  # it raised, or it is being aborted
                job = _Job(self, task_type, time_limit, run, record)
                job.context = ctx
                return await job.failed(failure, occurrence, None, None)
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
            run.trace = outcome.trace(exc, internal=True)
            filed = replace(record, traceback=run.trace).encode()
            reason = f"internal error: {outcome.describe(exc)}"
            return self._dead(task_type.name, claim, reason, filed, record.unique_ms)

    def _corrupt(self, task_type: str, claim: Claim, what: str, exc: SchemaError) -> Outcome:
        log.error("%s/%s: %s, sent to the dead letters: %s", task_type, _shown(claim.id), what, exc)
        return self._dead(task_type, claim, f"{what}: {exc}")

    def _dead(
        self,
        task_type: str,
        claim: Claim,
        reason: str,
        record: str | None = None,
        unique_ms: int = 0,
    ) -> Outcome:
        """The task to the dead letters with ``reason``, and ``record`` or the one the store
        holds."""
        if self.events.wants("dead_lettered"):
            event = WorkerEvent("dead_lettered", task_type, claim.id, claim.due_ms, error=reason)
            self.events.emit(event)
        filed = claim.record if record is None else record
        return Outcome("dead", claim, None, filed, reason, unique_ms=unique_ms)


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
        self.claim = claim = run.claim
        self.record = record
        occurrence = record.occurrence_ms
        self.occurrence_ms = claim.due_ms if occurrence is None else occurrence
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

    async def call(self, occurrence_ms: int, *, abort_at_ms: int | None = None) -> Exception | None:
        executor, claim, run = self._executor, self.claim, self._run
        if run.aborted is not None:  # aborted before its handler started: it never does
            return aborted_error(run)
        ctx = self.context = _context(executor, self.task_type, claim, self.record, occurrence_ms)
        if executor.marks:
            run.fired_ms = executor.clock.now()
            run.occurrence_ms, run.attempt = occurrence_ms, ctx[3]  # ctx.attempt
        timed = executor.timed
        if timed:
            self._event("started", lateness_ms=executor.clock.now() - claim.due_ms)
            began = time.monotonic()
        delay = None if abort_at_ms is None else (abort_at_ms - executor.clock.now()) / 1000
        timer = abort_later(run, delay, self.task_type.is_async, executor.grace)
        error: Exception | None = None
        try:
            self.result = await call_handler(
                self.task_type, self._time_limit, self.record.payload, ctx, executor.pool
            )
        except asyncio.CancelledError:
            if run.aborted is None:
                raise
        except Exception as exc:
            error = exc
        finally:
            if timer is not None:
                timer.cancel()
        error = ended(run, error)
        if timed:
            took = (time.monotonic() - began) * 1000
            if error is None:
                self._event("succeeded", duration_ms=took)
            else:
                text = outcome.describe(error)
                self._event("failed", duration_ms=took, error=text, exception=error)
        return error

    async def ask_hook(self, payload: dict[str, Any]) -> object:
        return await self.task_type.ask_hook(payload, self.context)

    def done(self, following: Next | None = None, *, hand_off_ms: int | None = None) -> Outcome:
        spawn = None
        if hand_off_ms is not None:
            spawn = outcome.hand_off(self.claim, self.record, hand_off_ms, self.now_ms())
        return outcome.success(self.claim, following, spawn, self.record.unique_ms)

    async def failed(
        self, error: Exception, occurrence_ms: int, state: Trigger | None, follow: Follow | None
    ) -> Outcome:
        if isinstance(error, AbortedRun):
            return await self._aborted(error, follow)
        claim, record, policy = self.claim, self.record, self.task_type.policy
        if isinstance(error, RateLimited):  # no attempt counted: the task waits, as it was
            return outcome.held(self.task_name, claim, error, self.now_ms())
        failures = record.failures + 1
        text = outcome.describe(error)
        trace = self._run.trace = outcome.trace(error)
        attempt = outcome.attempt(claim, record)
        if outcome.retries_left(error, policy, failures):
            now = self.now_ms()
            try:
                due = outcome.retry_due(error, policy, failures, now)
            except ValidationError as exc:
                log.warning("%s/%s: %s; the back-off applies", self.task_name, claim.id, exc)
                due = now + policy.backoff.delay_ms(failures)
            # The traceback of an attempt that is retried only at DEBUG: a flaky handler
            # would fill the log with it.
            log.warning(
                "%s/%s attempt %d failed (%s); retry at %s",
                self.task_name,
                claim.id,
                attempt,
                text,
                iso(due),
                exc_info=error if trace and log.isEnabledFor(logging.DEBUG) else None,
            )
            self._event("retried", due, error=text)
            return outcome.retry(claim, record, occurrence_ms, state, failures, due, text, trace)
        log.warning(
            "%s/%s attempt %d failed (%s); sent to the dead letters",
            self.task_name,
            claim.id,
            attempt,
            text,
            exc_info=error if trace else None,
        )
        self._event("dead_lettered", error=text)
        following = None if follow is None else await follow()
        return outcome.given_up(
            claim,
            record,
            occurrence_ms,
            failures,
            text,
            series=follow is not None,
            following=following,
            trace=trace,
        )

    async def _aborted(self, error: AbortedRun, follow: Follow | None) -> Outcome:
        """The outcome of an aborted run: the task ends, or its series goes on."""
        why = outcome.describe(error)
        log.warning("%s/%s: %s", self.task_name, self.claim.id, why)
        self._event("aborted", error=why)
        following = None if follow is None else await follow()
        return outcome.aborted(self.claim, following, why, self.record.unique_ms)

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


def _attempt(claim: Claim) -> int:
    """The attempt a claim is, read again from its record (for the DEBUG line only)."""
    try:
        failures = Record.decode(claim.record).failures
    except SchemaError:
        failures = 0
    return failures + claim.stalls + 1


def _finished(result: Outcome) -> str:
    """How a run ended, as the DEBUG line of each run says it."""
    op = result.op
    if op == "retry" and result.due_ms is not None:
        return f"retry at {iso(result.due_ms)}"
    if op == "next" and result.due_ms is not None:
        ended = f"dead, filed as {_shown(result.dead_id)}" if result.dead_id else "done"
        return f"{ended}; next at {iso(result.due_ms)}"
    return op
