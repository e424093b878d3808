"""The run history's values: what a run's note holds (the worker's), where and for how long
a settle records runs, a run as a store holds it (see ``capabilities.RunHistory``)."""

from __future__ import annotations

from typing import Literal, NamedTuple

#: How a run ended, as the run history names it: ``done``; ``failed``, an attempt that
#: will be tried again; ``dead``, an occurrence given up (the dead letters); ``aborted``, a
#: run cut short on purpose, neither retried nor filed.
RunOutcome = Literal["done", "failed", "dead", "aborted"]
RUN_OUTCOMES: tuple[RunOutcome, ...] = ("done", "failed", "dead", "aborted")


class RunNote(NamedTuple):
    """What the run history keeps of a run (see
    :class:`~duetime.stores.capabilities.RunHistory`).

    Attributes:
        started_ms: when its handler started (store clock ms), or 0 when none did (a record
            that could not be read).
        finished_ms: when the run ended.
        attempt: which attempt at its occurrence it was (1 for the first).
        occurrence_ms: the occurrence it ran (its due time, or the tick, or the occurrence a
            retry belongs to).
        outcome: how it ended.
        error: why it failed (bounded), or why it ended; "" for none.
        trace: the traceback of a failure, bounded as a task keeps it; "" for none.
        result: what a done run's handler returned, as JSON text (at most
            ``results.MAX_RESULT_BYTES``); "" for none (it returned None).
    """

    started_ms: int
    finished_ms: int
    attempt: int
    occurrence_ms: int
    outcome: RunOutcome
    error: str = ""
    trace: str = ""
    result: str = ""


class RunLog(NamedTuple):
    """Where and for how long a settle or a claim records runs in the type's history.

    Attributes:
        worker: the id of the worker that ran them (reaped runs: ``""``, it is unknown).
        keep: the most runs the type's history keeps (the newest).
        max_age_ms: runs that finished longer ago than this are dropped.
    """

    worker: str
    keep: int
    max_age_ms: int


class StoredRun(NamedTuple):
    """One run as a type's history holds it (see :class:`RunNote` for the fields it shares).

    Attributes:
        started_ms: None when no handler started, or the store does not know when (a
            crashed run, recorded as its lease expired).
        error: the error of a failure, or why it ended (a lease that expired).
        worker: the id of the worker that ran it; None when unknown (a crashed run).
        result: what its handler returned, as JSON text; None for none.
    """

    task_id: str
    occurrence_ms: int
    attempt: int
    started_ms: int | None
    finished_ms: int
    outcome: str
    error: str | None
    trace: str | None
    worker: str | None
    result: str | None = None
