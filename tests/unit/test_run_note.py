"""What the run history keeps of a run (``worker/run.py``): the outcome it names from the
settle's op and the run's verdict, its times, attempt and occurrence, its error (bounded)
and traceback; and which types' runs a worker records (``features/history``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

import duetime
from duetime.clock import ManualClock
from duetime.features.base import WorkerRun
from duetime.features.history import HistoryFeature
from duetime.stores.base import Outcome, done, new_claim
from duetime.stores.runs import RunLog, RunNote
from duetime.worker.notes import ERROR_BYTES, done_run, note
from duetime.worker.run import Run

CLAIM = new_claim("t1", 7, 1, 1_000, '{"p":{}}')


def ran(**fields: object) -> Run:
    run = Run(CLAIM)
    run.fired_ms, run.occurrence_ms, run.attempt = 1_010.7, 900, 3
    for name, value in fields.items():
        setattr(run, name, value)
    return run


def test_a_plain_completion_is_noted_at_once_by_the_executor() -> None:
    outcome = done_run(CLAIM, 1_010.7, 1_020, 2, 900, unique_ms=60_000)
    note_made = RunNote(1_010, 1_020, 2, 900, "done")
    assert outcome == Outcome("done", CLAIM, unique_ms=60_000, note=note_made)
    assert note(ran(), outcome, 2_000) is outcome  # the runner leaves it as it is


def test_the_op_names_the_outcome_and_the_run_gives_the_rest() -> None:
    retry = Outcome("retry", CLAIM, 5_000, "{}", "ValueError: no")
    noted = note(ran(trace="Traceback ..."), retry, 1_030).note
    assert noted == RunNote(1_010, 1_030, 3, 900, "failed", "ValueError: no", "Traceback ...")
    dead = note(ran(), Outcome("dead", CLAIM, None, "{}", "gone"), 1_030).note
    assert dead is not None and (dead.outcome, dead.error) == ("dead", "gone")
    # A series out of retries goes on (next) and files the occurrence: dead.
    filed = Outcome("next", CLAIM, 9_000, "{}", "boom", "t1@900", "{}")
    assert note(ran(), filed, 1_030).note.outcome == "dead"  # type: ignore[union-attr]
    assert note(ran(), done(CLAIM), 1_030).note.outcome == "done"  # type: ignore[union-attr]


def test_an_aborted_run_is_named_so_whatever_the_op() -> None:
    why = "aborted: App.abort() was called"
    for op in ("done", "next"):
        due = None if op == "done" else 2_000
        aborted = Outcome(op, CLAIM, due, "{}", why, aborted=True)
        kept = note(ran(), aborted, 1_030).note
        assert kept == RunNote(1_010, 1_030, 3, 900, "aborted", why)


def test_what_is_not_a_run_is_not_noted() -> None:
    release = Outcome("release", CLAIM, 1_000)
    assert note(ran(), release, 1_030) is release  # handed back: it did not end
    # No handler ran and nothing failed: a cron tick handed off or missed.
    handed_off = Outcome("next", CLAIM, 2_000, "{}")
    assert note(Run(CLAIM), handed_off, 1_030) is handed_off


def test_a_claim_of_unreadable_data_is_noted_in_range_and_its_error_bounded() -> None:
    odd = new_claim("t1", 7, 4, 2**62, "not json")
    corrupt = Outcome("dead", odd, None, "not json", "corrupt record: " + "x" * 10_000)
    kept = note(Run(odd), corrupt, 1_030).note
    assert kept is not None
    assert (kept.started_ms, kept.attempt, kept.occurrence_ms) == (0, 5, 0)
    assert len(kept.error.encode()) <= ERROR_BYTES and "bytes cut" in kept.error


def test_a_worker_records_the_types_that_keep_a_history() -> None:
    def records(default: duetime.History | bool, **per_type: object) -> dict[str, RunLog]:
        app = duetime.App("sqlite:///unused.db", history=default)
        for name, setting in per_type.items():
            app.task(name, history=setting)(_handler)  # type: ignore[arg-type]
        types = (*per_type, "duetime.poller.p")  # duetime's own: never
        run = WorkerRun(cast(Any, None), ManualClock(0), types, "ns", "w-1", lambda: ({}, None))
        return dict(app.registry.get(HistoryFeature).records(run))

    week = int(timedelta(days=7).total_seconds() * 1000)
    assert records(True, a=None, b=False) == {"a": RunLog("w-1", 1000, week)}
    assert records(False, a=None, b=True) == {"b": RunLog("w-1", 1000, week)}
    custom = duetime.History(keep=5, max_age=60)
    assert records(custom, a=None, b=duetime.History(keep=9)) == {
        "a": RunLog("w-1", 5, 60_000),
        "b": RunLog("w-1", 9, week),
    }


async def _handler(payload: dict[str, object]) -> None:
    pass
