"""What the run history keeps of a run (its note, riding with its outcome to the settle):
made by the executor at once for a plain completion (:func:`done_run`), else by the runner
as the run finishes (:func:`note`)."""

from __future__ import annotations

from duetime.clock import in_range
from duetime.stores.base import NOTE, Claim, Outcome, noted
from duetime.stores.runs import RunNote, RunOutcome
from duetime.worker.outcome import bounded
from duetime.worker.run import Run

#: The most bytes of UTF-8 of a run's error the history keeps (the traceback is bounded
#: where the failure is judged: ``outcome.TRACE_BYTES``).
ERROR_BYTES = 2048

_new = tuple.__new__


def done_run(
    claim: Claim,
    started_ms: float,
    finished_ms: int,
    attempt: int,
    occurrence_ms: int,
    unique_ms: int = 0,
    result: str = "",
) -> Outcome:
    """``done(claim, unique_ms)`` with its run's note (and its handler's ``result``, JSON
    text), built the cheapest way: the hot path of a type that keeps a history."""
    ran = _new(
        RunNote, (int(started_ms), finished_ms, attempt, occurrence_ms, "done", "", "", result)
    )
    return _new(Outcome, ("done", claim, None, "", "", "", "", None, unique_ms, False, ran))


def note(run: Run, outcome: Outcome, finished_ms: int) -> Outcome:
    """``outcome`` with what the run history keeps of ``run``, which ended at
    ``finished_ms`` (unless it has it already: :func:`done_run`); as it is for an end that
    is not a run's (a hand-back, or a claim whose handler did not start and that did not
    fail: a cron tick handed off or missed). An aborted run's outcome (``aborted``) names
    it ``aborted``, whatever its op."""
    if outcome[NOTE] is not None:
        return outcome
    op = outcome.op
    failed = op in ("retry", "dead") or bool(outcome.dead_id)
    aborted = outcome.aborted
    if op == "release" or not (run.fired_ms or failed or aborted):
        return outcome
    verdict: RunOutcome = (
        "aborted" if aborted else "failed" if op == "retry" else "dead" if failed else "done"
    )
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
        run.result if verdict == "done" else "",
    )
    return noted(outcome, kept)
