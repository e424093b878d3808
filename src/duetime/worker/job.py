"""One claim being run, as its trigger sees it: the :class:`~duetime.triggers.base.Job` the
executor offers each run that does not take the hot path (a trigger's, a failure's, or one a
listener times), and the :class:`~duetime.context.Context` every handler is given."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from concurrent.futures import Executor as ThreadPool
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from duetime.clock import Clock, from_ms, iso
from duetime.context import NO_META, Context
from duetime.errors import AbortedRun, RateLimited, Stalled, ValidationError
from duetime.events import EventKind, Events, WorkerEvent
from duetime.meta import shown_meta
from duetime.record import Record
from duetime.stores.base import Claim, Outcome
from duetime.tasktype import TaskType
from duetime.triggers.base import Follow, Next, Trigger
from duetime.worker import outcome
from duetime.worker.handler import call_handler
from duetime.worker.results import kept
from duetime.worker.run import Run, abort_later, aborted_error, ended
from duetime.worker.wrapped import Chain

if TYPE_CHECKING:
    from duetime.client import Client

#: The logger of a task's runs that docs/debugging.md names: the executor's.
log = logging.getLogger("duetime.worker.executor")

_new_tuple = tuple.__new__


class JobHost(Protocol):
    """What a job reads of the executor that runs it."""

    clock: Clock
    events: Events
    app: Client
    pool: ThreadPool | None
    grace: float
    max_payload_bytes: int
    #: whether a listener wants the per-task start and end events (handlers are timed)
    timed: bool
    #: whether a run's start is noted (the minute counter or the run history needs it)
    marks: bool
    #: the task types whose runs the run history keeps (and their results)
    noted: frozenset[str]
    #: the middleware of the task types that have any, by name
    chains: Mapping[str, Chain]


def handler_context(
    app: Client,
    task_type: TaskType,
    claim: Claim,
    attempt: int,
    occurrence_ms: int,
    meta_json: str | None = None,
) -> Context:
    """What a handler is told about its run, its ``attempt`` at the occurrence due at
    ``occurrence_ms``, and the task's metadata (its record's ``meta_json``) (made with
    tuple.__new__: a named tuple's own constructor costs twice as much, on every task's
    path)."""
    return _new_tuple(
        Context,
        (
            task_type.name,
            claim.id,
            from_ms(occurrence_ms),
            attempt,
            outcome.occurrence_id(claim.id, occurrence_ms),
            claim.token,
            app,
            claim,
            NO_META if meta_json is None else MappingProxyType(shown_meta(meta_json)),
        ),
    )


class ClaimJob:
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
        executor: JobHost,
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
        if claim.stalls > self.task_type.policy.max_stalls:  # it killed its workers enough
            return Stalled(claim.stalls)
        attempt = outcome.attempt(claim, self.record)
        meta = self.record.meta_json
        ctx = handler_context(executor.app, self.task_type, claim, attempt, occurrence_ms, meta)
        self.context = ctx
        if executor.marks:
            run.fired_ms = executor.clock.now()
            run.occurrence_ms, run.attempt = occurrence_ms, attempt
        timed = executor.timed
        if timed:
            self._event("started", lateness_ms=executor.clock.now() - claim.due_ms)
            began = time.monotonic()
        delay = None if abort_at_ms is None else (abort_at_ms - executor.clock.now()) / 1000
        timer = abort_later(run, delay, self.task_type.is_async, executor.grace)
        error: Exception | None = None
        try:
            task_type = self.task_type
            chain = executor.chains.get(task_type.name, ())
            payload, pool = self.record.payload, executor.pool
            self.result = await call_handler(task_type, self._time_limit, payload, ctx, pool, chain)
            if self.result is not None and self.task_name in executor.noted:
                run.result = kept(self.result)  # for the history (Abort: not kept)
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
        record = self.record
        return outcome.success(self.claim, following, spawn, record.unique_ms, record.meta_json)

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
        record = self.record
        return outcome.aborted(self.claim, following, why, record.unique_ms, record.meta_json)

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
