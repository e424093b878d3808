"""The worker's per-minute counts: what each settled run and event adds, and that counts a
store refused are kept for the next flush (against a real SQLite store, closed, then open)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duetime.events import WorkerEvent
from duetime.features.telemetry.counting import MinuteCounter
from duetime.stores import open_store
from duetime.stores.base import Claim, Op, Outcome
from duetime.stores.capabilities import TELEMETRY, use
from duetime.worker.run import Run

M = 1_900_000_020_000 - 1_900_000_020_000 % 60_000  # a minute's start


def _run(task_id: str, due: int, fired_ms: float, op: Op = "done", **fields: Any) -> Run:
    claim = Claim(task_id, 1, 0, due, '{"p":{}}')
    return Run(claim, fired_ms=fired_ms, outcome=Outcome(op, claim, **fields))


def test_runs_count_in_the_minute_their_handler_started_and_events_in_theirs() -> None:
    counter = MinuteCounter()
    counter.finished(
        "mail",
        [
            _run("a", M + 1_000, M + 1_003.0),  # 3 ms late, done
            _run("b", M + 59_999, M + 59_999.5, "retry", due_ms=M + 70_000, error="E"),
            _run("c", M, M + 60_500.0, "dead", error="E"),  # started in the next minute
            _run("d", M, M + 10.0, "next"),  # a series' occurrence that went well
            _run("e", M, M + 20.0, "next", error="E", dead_id="e@1"),  # filed, goes on
            _run("f", M + 5, 0.0, "dead", error="corrupt record"),  # no handler ran
        ],
    )
    counter.finished("report", [_run("g", M, M + 90_000.0)])  # 90 s late
    counter.missed_ticks(WorkerEvent("missed_ticks", "nightly", "n", M, count=4))
    assert counter.counts() == {
        (M, "mail", "fired"): 4,
        (M, "mail", "late.5"): 1,  # a (3 ms)
        (M, "mail", "late.1"): 1,  # b (0.5 ms)
        (M, "mail", "late.10"): 1,  # d (10 ms)
        (M, "mail", "late.25"): 1,  # e (20 ms)
        (M, "mail", "succeeded"): 2,  # a and d
        (M, "mail", "failed"): 2,  # b and e
        (M, "mail", "retried"): 1,  # b
        (M, "mail", "dead_lettered"): 2,  # e's occurrence, and f
        (M + 60_000, "mail", "fired"): 1,  # c
        (M + 60_000, "mail", "late.inf"): 1,
        (M + 60_000, "mail", "failed"): 1,
        (M + 60_000, "mail", "dead_lettered"): 1,
        (M + 60_000, "report", "fired"): 1,  # started 90 s after its due time
        (M + 60_000, "report", "late.inf"): 1,
        (M + 60_000, "report", "succeeded"): 1,
        (M, "nightly", "missed"): 4,
    }


async def test_counts_the_store_refused_are_added_at_the_next_flush(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'd.db'}", namespace="n")
    counter = MinuteCounter()
    counter.finished("mail", [_run("a", M, M + 1.0)])
    await counter.flush(store, M + 1_000)  # not open: refused, kept
    assert counter.counts() == {
        (M, "mail", "fired"): 1,
        (M, "mail", "late.1"): 1,
        (M, "mail", "succeeded"): 1,
    }
    await store.open()
    try:
        counter.finished("mail", [_run("b", M, M + 1.0)])
        await counter.flush(store, M + 2_000)
        assert counter.counts() == {}
        assert await use(store, TELEMETRY).telemetry.counts_since(M) == {
            (M, "mail", "fired"): 2,
            (M, "mail", "late.1"): 2,
            (M, "mail", "succeeded"): 2,
        }
    finally:
        await store.close()
