"""One claim held by a worker, from its claim until its outcome is settled: what the
runner starts, the executor marks as it calls the handler, the outbox settles, and the
listeners of finished runs read (``Listener.finished``); and what the run history keeps of
it (:func:`note`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from duetime.clock import in_range
from duetime.stores.base import Claim, Outcome, noted
from duetime.stores.runs import RunNote, RunOutcome
from duetime.worker.outcome import bounded

#: The most bytes of UTF-8 of a run's error the history keeps (the traceback is bounded
#: where the failure is judged: ``outcome.TRACE_BYTES``).
ERROR_BYTES = 2048

_new = tuple.__new__


@dataclass(eq=False, slots=True)
class Run:
    """A claim held by this worker.

    Attributes:
        claim: the lease, with the task's id, due time and record.
        early: claimed before it was due (the look-ahead): it waits for its time.
        task: the asyncio task running it.
        finished: its outcome is known (it may not be settled yet).
        fired_ms: when its handler started, by the store's clock (0.0: it did not start,
            or no listener or history asked for it: see ``Executor.marks``).
        occurrence_ms: the occurrence its handler ran (0: unknown; noted with fired_ms).
        attempt: which attempt at that occurrence it was (0: unknown; noted with fired_ms).
        trace: the traceback of its failure, as the task keeps it.
        verdict: how the run history names its end when its outcome's op does not say it:
            ``"aborted"`` for a run cut short on purpose (it is neither retried nor
            filed); None to go by the op.
        outcome: what follows the run, once finished.
    """

    claim: Claim
    early: bool = False
    task: asyncio.Task[None] | None = None
    finished: bool = False
    fired_ms: float = 0.0
    occurrence_ms: int = 0
    attempt: int = 0
    trace: str | None = None
    verdict: RunOutcome | None = None
    outcome: Outcome | None = None


def done_run(
    claim: Claim, started_ms: float, finished_ms: int, attempt: int, occurrence_ms: int
) -> Outcome:
    """``Outcome("done", claim)`` with its run's note, built the cheapest way: the hot path
    of a type that keeps a history."""
    ran = _new(RunNote, (int(started_ms), finished_ms, attempt, occurrence_ms, "done", "", ""))
    return _new(Outcome, ("done", claim, None, "", "", "", "", None, ran))


def note(run: Run, outcome: Outcome, finished_ms: int) -> Outcome:
    """``outcome`` with what the run history keeps of ``run``, which ended at
    ``finished_ms`` (unless it has it already: :func:`done_run`); as it is for an end that
    is not a run's (a hand-back, or a claim whose handler did not start and that did not
    fail: a cron tick handed off or missed)."""
    verdict = run.verdict
    made = outcome[8]
    if made is not None:  # a plain completion's, unless the run was aborted meanwhile
        return outcome if verdict is None else noted(outcome, made._replace(outcome=verdict))
    op = outcome.op
    failed = op in ("retry", "dead") or bool(outcome.dead_id)
    if op == "release" or not (run.fired_ms or failed or verdict):
        return outcome
    if verdict is None:
        verdict = "failed" if op == "retry" else "dead" if failed else "done"
    claim = run.claim
    error = outcome.error
    if error and len(error) > ERROR_BYTES // 4:  # four bytes of UTF-8 at most a character
        error = bounded(error, ERROR_BYTES)
    occurrence = run.occurrence_ms or claim.due_ms
    kept = RunNote(
        int(run.fired_ms),
        finished_ms,
        run.attempt or claim.stalls + 1,
        # A claim of data the worker could not read (filed as corrupt) may say anything:
        # what the history keeps of it stays in range for every store.
        occurrence if in_range(occurrence) else 0,
        verdict,
        error,
        run.trace or "",
    )
    return noted(outcome, kept)
