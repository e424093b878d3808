"""One claim held by a worker, from its claim until its outcome is settled: what the
runner starts, the executor marks as it calls the handler, the outbox settles, and the
listeners of finished runs read (``Listener.finished``); and how such a run is aborted
(:mod:`duetime.worker.abort` finds the runs the store marked)."""

from __future__ import annotations

import asyncio
import functools
import logging
from dataclasses import dataclass

from duetime.errors import AbortedRun
from duetime.stores.base import Claim, Outcome

log = logging.getLogger(__name__)

#: Why a run marked in the store is aborted, as its outcome's error says.
ABORTED_BY_CALL = "aborted: App.abort() was called"


@dataclass(eq=False, slots=True)
class Run:
    """A claim held by this worker.

    Attributes:
        claim: the lease, with the task's id, due time and record.
        task: the asyncio task running it.
        finished: its outcome is known (it may not be settled yet).
        fired_ms: when its handler started, by the store's clock (0.0: it did not start,
            or no listener or history asked for it: see ``Executor.marks``).
        occurrence_ms: the occurrence its handler ran (0: unknown; noted for the history).
        attempt: which attempt at that occurrence it was (0: unknown; noted likewise).
        trace: the traceback of its failure, as the task keeps it (for the history).
        result: what its handler returned, as JSON text, when its type keeps a history and
            it returned something ("" otherwise: see :mod:`.results`).
        outcome: what follows the run, once finished.
        aborted: why the run is being aborted (None while it is not): see :func:`abort_run`.
        cut: the timer that cancels an aborted handler again at the end of the grace.
    """

    claim: Claim
    task: asyncio.Task[None] | None = None
    finished: bool = False
    fired_ms: float = 0.0
    occurrence_ms: int = 0
    attempt: int = 0
    trace: str | None = None
    result: str = ""
    outcome: Outcome | None = None
    aborted: str | None = None
    cut: asyncio.TimerHandle | None = None


def aborted_error(run: Run) -> AbortedRun:
    """The run's abort as its handler call's error."""
    return AbortedRun(run.aborted or ABORTED_BY_CALL)


def abort_run(run: Run, why: str, *, interruptible: bool, grace: float) -> bool:
    """Abort ``run`` (unless it is already aborting or finished), saying ``why``; returns
    whether this call began the abort.

    With ``interruptible`` (an ``async def`` handler), its asyncio task is cancelled now,
    and again after ``grace`` seconds if the handler still runs (it caught the first
    cancellation to clean up). A plain ``def`` handler runs on in its thread; its result is
    discarded when it ends. A run still waiting for its due time never calls its handler.
    """
    if run.aborted is not None or run.finished:
        return False
    run.aborted = why
    task = run.task
    if interruptible and task is not None:
        task.cancel()
        run.cut = asyncio.get_running_loop().call_later(grace, _cut_short, run)
    return True


def abort_later(
    run: Run, delay: float | None, interruptible: bool, grace: float
) -> asyncio.TimerHandle | None:
    """A timer that aborts ``run`` in ``delay`` seconds (None: no timer): at the next tick
    of a cron schedule whose overlap is ``cancel_other``."""
    if delay is None:
        return None
    why = "aborted: the next tick came due (overlap=cancel_other)"
    loop = asyncio.get_running_loop()
    return loop.call_later(
        max(0.0, delay),
        functools.partial(abort_run, interruptible=interruptible, grace=grace),
        run,
        why,
    )


def ended(run: Run, error: Exception | None) -> Exception | None:
    """How a handler's call of ``run`` ended for its trigger: ``error`` (None when it
    returned), or, once the run is being aborted, its abort (whatever the handler did: its
    end is discarded)."""
    if run.aborted is None:
        return error
    abort_taken(run)
    return aborted_error(run)


def _cut_short(run: Run) -> None:
    run.cut = None
    if not run.finished and run.task is not None:
        log.warning(
            "%s: its handler ran on past the grace period after it was aborted; cancelled again",
            run.claim.id,
        )
        run.task.cancel()


def abort_taken(run: Run) -> None:
    """The abort of ``run`` reached its handler call (or its run, outside the call): no
    second cancellation, and the current asyncio task is no longer being cancelled."""
    if run.cut is not None:
        run.cut.cancel()
        run.cut = None
    task = asyncio.current_task()
    if task is not None:
        while task.cancelling():
            task.uncancel()
