"""What the stores write of the run history beside the worker's notes, and how they read it
back, pure logic: the run of an attempt whose lease expired (its worker died or hung),
known only from what the store holds (the Redis store's claim script does the same); a
batch of plain completions as one text, as the SQL stores keep it; the paging of a read."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

from duetime.errors import StoreRefused
from duetime.stores import wire
from duetime.stores.runs import RunLog, RunNote, RunOutcome, StoredRun

#: The error of an attempt whose lease expired and that runs again: what became of it is
#: not known.
LEASE_EXPIRED = "lease expired (its worker stopped or hung)"
#: The errors of one that went to the dead letters instead (as the claim files them).
AT_MOST_ONCE = "lease expired; not run again (at-most-once delivery)"

#: What a claim's reaping decided for an expired lease (reap.sql, expired.sql).
Verdict = Literal["ended", "at_most_once", "stalled_out", "requeue"]


def stalled_out(stalls: int) -> str:
    """The error of a task sent to the dead letters after ``stalls`` expired leases."""
    return f"stalled: its lease expired {stalls} times"


def crashed(
    verdict: str, record: str | None, stalls: int, claimed_due_ms: int, now_ms: int
) -> RunNote | None:
    """The run of an attempt whose lease expired, from the verdict of the
    reaping, the task's record (its failures ``"f"`` and occurrence ``"o"``), its expired
    leases before this one (``stalls``) and the due time it was claimed at; None for a lease
    that just ends (the task was rescheduled or cancelled while it ran)."""
    if verdict == "ended":
        return None
    failures, occurrence = _counted(record)
    outcome: RunOutcome
    if verdict == "requeue":
        outcome, error = "failed", LEASE_EXPIRED
    elif verdict == "at_most_once":
        outcome, error = "dead", AT_MOST_ONCE
    else:
        outcome, error = "dead", stalled_out(stalls + 1)
    attempt = failures + stalls + 1
    return RunNote(0, now_ms, attempt, occurrence or claimed_due_ms, outcome, error)


def _counted(record: str | None) -> tuple[int, int | None]:
    """The failures and the occurrence a record holds, read leniently (a record that cannot
    be read counts none: its run is recorded all the same)."""
    try:
        doc = json.loads(record or "")
    except (ValueError, RecursionError):
        return 0, None
    if type(doc) is not dict:
        return 0, None
    failures, occurrence = doc.get("f", 0), doc.get("o")
    return (
        failures if type(failures) is int and failures >= 0 else 0,
        occurrence if type(occurrence) is int else None,
    )


def check_log(record: RunLog | None) -> None:
    """Refuse a history's settings a store cannot trim by, before anything is written.

    Raises:
        StoreRefused: a keep or a max age below 1.
    """
    if record is not None and (record.keep < 1 or record.max_age_ms < 1):
        raise StoreRefused("bad arguments: the history needs a keep and a max age of 1 or more")


# The runs of one settle's plain completions, as the SQL stores keep them: one row of text,
# a line per run in the order they settled, each "<ms before base it finished>|<ms its
# handler ran, '' for none>|<attempt, '' for 1>|<ms before base of its occurrence>|<id>"
# (ids hold no control characters: a line ends at the newline). Short lines, no work per run
# in the database: the batch is one row.


def is_plain(note: RunNote | None) -> bool:
    """Whether a note is a plain completion's (done, without an error, traceback or
    result): the runs a batch holds."""
    return note is not None and note[4] == "done" and not note[5] and not note[6] and not note[7]


def pack(runs: Sequence[tuple[str, RunNote]], base_ms: int) -> str:
    """The text of a batch of plain completions (id, note), relative to ``base_ms``."""
    lines = []
    for task_id, n in runs:  # the note by index: this is done for every task
        finished = n[1]
        took = finished - n[0] if n[0] else ""
        attempt = "" if n[2] == 1 else n[2]
        lines.append(f"{base_ms - finished}|{took}|{attempt}|{base_ms - n[3]}|{task_id}")
    return "\n".join(lines)


def unpack(text: str, base_ms: int, worker: str | None) -> list[StoredRun]:
    """The runs of a batch's text, newest (last settled) first; a line that cannot be read
    is left out."""
    found = []
    for line in reversed(text.split("\n")):
        parts = line.split("|", 4)
        if len(parts) == 5:
            found.append(batch_run(parts[:4], parts[4], base_ms, worker))
    return found


def batch_run(
    timing: Sequence[str | bytes], task_id: str, base_ms: int, worker: str | None
) -> StoredRun:
    """One run of a batch: its timing fields (before, took, attempt, occurrence: see
    :func:`pack`) and id."""
    before, took, attempt, occurrence = timing
    finished = base_ms - wire.ms(before)
    return StoredRun(
        task_id=task_id,
        occurrence_ms=base_ms - wire.ms(occurrence),
        attempt=wire.count(attempt) if attempt else 1,
        started_ms=finished - wire.ms(took) if took else None,
        finished_ms=finished,
        outcome="done",
        error=None,
        trace=None,
        worker=worker,
    )


class Newest:
    """The newest runs of a history read newest first, a page of entries at a time (an
    entry: a batch's runs, or one run, with how many runs the type kept as it was written):
    up to ``limit``, no more than the newest entry's keep, only ``task_id``'s if given,
    none that finished before ``since_ms``. The runs of a page are put in the order they
    finished (a settle writes its failures' entries, then its batch)."""

    def __init__(self, task_id: str | None, limit: int, since_ms: int | None) -> None:
        self.task_id, self.limit, self.since_ms = task_id, limit, since_ms
        self.found: list[StoredRun] = []
        self._seen = 0
        self._keep: int | None = None

    def page(self, entries: Sequence[tuple[int, list[StoredRun]]]) -> bool:
        """Take a page of entries, newest first; whether the read is over (the caller reads
        no further page then, nor after a short one)."""
        runs: list[StoredRun] = []
        for keep, entry in entries:
            self._keep = keep if self._keep is None else self._keep
            runs += entry[: max(0, self._keep - self._seen)]
            self._seen += len(entry)
        runs.sort(key=lambda run: run.finished_ms, reverse=True)
        since = self.since_ms
        for run in runs:
            if since is not None and run.finished_ms < since:
                return True  # the rest finished earlier still
            if self.task_id is None or run.task_id == self.task_id:
                self.found.append(run)
                if len(self.found) == self.limit:
                    return True
        return self._keep is not None and self._seen >= self._keep


def row_runs(row: Sequence[object]) -> tuple[int, list[StoredRun]]:
    """A row of a SQL store's run history (base_ms, keep, worker, batch, id, occurrence_ms,
    attempt, started_ms, outcome, error, trace, result): how many runs the type kept as it
    was written, and its runs (a batch's, or its one), newest first."""
    base, keep, worker, batch, task_id, occurrence, attempt, started, outcome, error, trace = row[
        :11
    ]
    result = row[11] if len(row) > 11 else None
    by, base_ms = wire.maybe_text(worker), wire.ms(base)
    if batch is not None:
        return wire.count(keep), unpack(wire.text(batch), base_ms, by)
    run = StoredRun(
        wire.text(task_id),
        wire.ms(occurrence),
        wire.count(attempt),
        wire.readable(started),
        base_ms,
        wire.text(outcome),
        wire.maybe_text(error),
        wire.maybe_text(trace),
        by,
        wire.maybe_text(result),
    )
    return wire.count(keep), [run]
