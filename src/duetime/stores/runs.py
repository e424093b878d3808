"""What every store writes of the run history beside the worker's notes: the run of an
attempt whose lease expired (its worker died or hung), known only from what the store
holds. Pure logic, shared by the SQL stores (the Redis store's claim script does the same).
"""

from __future__ import annotations

import json
from typing import Literal

from duetime.errors import StoreRefused
from duetime.stores.base import RunLog, RunNote, RunOutcome

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
