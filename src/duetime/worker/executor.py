"""Running one claimed task: decode its record, let its trigger run it, return the Outcome.

The executor knows no kind of trigger. It offers each run a :class:`Job` (the seam in
:mod:`duetime.triggers.base`): the handler's call, under the type's time limit, and the
retry policy; the record's trigger (or, without one, :func:`~duetime.triggers.once.run_once`)
decides what runs and what follows.

There are two paths, and only two: this general one, and the fast path of :mod:`.hot` (a
one-off task's first attempt run by an ``async def`` handler: it calls the handler there
and then, and returns the outcome when the handler finishes without waiting).
``tests/unit/test_fast_path.py`` drives both with the same claims and asserts the same
outcomes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from concurrent.futures import Executor as ThreadPool
from dataclasses import replace
from typing import TYPE_CHECKING

from duetime.clock import Clock, iso
from duetime.context import Context
from duetime.errors import SchemaError
from duetime.events import Events, WorkerEvent
from duetime.record import Record, check_claimed
from duetime.stores.base import Claim, Outcome, done
from duetime.tasktype import TaskType
from duetime.triggers.once import run_once
from duetime.worker import outcome
from duetime.worker.job import ClaimJob
from duetime.worker.notes import done_run
from duetime.worker.run import Run, ended
from duetime.worker.wrapped import Chain

if TYPE_CHECKING:
    from duetime.client import Client

log = logging.getLogger(__name__)

#: Runs one claim and returns its outcome.
RunClaim = Callable[[TaskType, float | None, Run], Awaitable[Outcome]]


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
        chains: the middleware of the task types that have any, by name
            (:mod:`.wrapped`): their runs never take the hot path.
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
        chains: Mapping[str, Chain] | None = None,
    ) -> None:
        self.clock = clock
        self.grace = grace
        self.max_payload_bytes = max_payload_bytes
        self.pool = pool
        self.events = events
        self.app = app
        self.chains: Mapping[str, Chain] = chains or {}
        # Handlers are timed only for a listener that wants it, and their start noted (one
        # clock read, with the occurrence and attempt) only for a listener of finished runs
        # (the minute counter) or a run history (``noting``).
        self.timed = any(events.wants(k) for k in ("started", "succeeded", "failed"))
        self.noted = frozenset(noting)
        self.marks = bool(noting) or events.wants("finished")
        #: Run one claim and return its outcome (see :meth:`_run`); with DEBUG logging (as
        #: the worker starts), a line for each run too. Chosen once: no cost per task.
        logged = log.isEnabledFor(logging.DEBUG)
        self.run: RunClaim = self._run_logged if logged else self._run
        #: Whether runs may take the hot path (:mod:`.hot`; not with per-task events or lines).
        self.eager = not (logged or self.timed)

    def done(
        self, task_type: TaskType, run: Run, attempt: int, occurrence: int, unique: int = 0
    ) -> Outcome:
        """The outcome of a run whose handler returned: done, with its run's note when the
        type keeps a history."""
        claim = run.claim
        if task_type.name in self.noted:
            ended_ms = int(self.clock.now())
            result = run.result
            return done_run(claim, run.fired_ms, ended_ms, attempt, occurrence, unique, result)
        return done(claim, unique)

    async def failed(
        self,
        task_type: TaskType,
        time_limit: float | None,
        run: Run,
        record: Record,
        occurrence: int,
        attempt: int,
        ctx: Context | None,
        error: Exception | None,
    ) -> Outcome:
        """What follows a failed (or aborted) run of a task without a trigger."""
        run.occurrence_ms, run.attempt = occurrence, attempt  # for the history's note
        failure = ended(run, error)
        assert failure is not None  # it raised, or it is being aborted
        job = ClaimJob(self, task_type, time_limit, run, record)
        job.context = ctx
        return await job.failed(failure, occurrence, None, None)

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
            job = ClaimJob(self, task_type, time_limit, run, record)
            if trigger is None:
                return await run_once(job)
            return await trigger.run(job)
        except SchemaError as exc:  # a trigger found its state unusable as it ran
            return self._corrupt(task_type.name, claim, "corrupt record", exc)
        except Exception as exc:
            return self.internal(task_type.name, claim, record, exc, run)

    def internal(
        self, task_type: str, claim: Claim, record: Record, exc: Exception, run: Run | None = None
    ) -> Outcome:
        """A failure of duetime's own code while it ran the task: logged with its
        traceback, which the dead letter keeps (with the record as it was)."""
        log.exception(
            "%s/%s: duetime failed while running it; sent to the dead letters",
            task_type,
            _shown(claim.id),
        )
        trace = outcome.trace(exc, internal=True)
        if run is not None:
            run.trace = trace
        filed = replace(record, traceback=trace).encode()
        reason = f"internal error: {outcome.describe(exc)}"
        return self._dead(task_type, claim, reason, filed, record.unique_ms)

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
