"""The worker's per-minute counts: what each event adds, and that counts a store refused
are kept for the next flush (against a real SQLite store, closed, then open)."""

from __future__ import annotations

from pathlib import Path

from duetime.events import WorkerEvent
from duetime.features.telemetry.counting import MinuteCounter
from duetime.stores import open_store
from duetime.stores.capabilities import TELEMETRY, use

M = 1_900_000_020_000 - 1_900_000_020_000 % 60_000  # a minute's start


def test_each_event_counts_in_the_minute_it_happened() -> None:
    counter = MinuteCounter()
    counter.started(WorkerEvent("started", "mail", "a", M + 1_000, 1, lateness_ms=3.0))
    counter.started(WorkerEvent("started", "mail", "b", M + 59_999, 1, lateness_ms=0.5))
    counter.succeeded(WorkerEvent("succeeded", "mail", "a", M + 1_000, 1, duration_ms=2.0))
    counter.failed(WorkerEvent("failed", "mail", "b", M + 59_999, 1, duration_ms=5.0))
    counter.retried(WorkerEvent("retried", "mail", "b", M + 70_000, 1))
    counter.started(WorkerEvent("started", "report", "c", M, 1, lateness_ms=90_000.0))
    counter.missed_ticks(WorkerEvent("missed_ticks", "nightly", "n", M, count=4))
    assert counter.counts() == {
        (M, "mail", "fired"): 2,
        (M, "mail", "late.5"): 1,
        (M, "mail", "late.1"): 1,
        (M, "mail", "succeeded"): 1,
        (M + 60_000, "mail", "failed"): 1,  # started at :59.999, ended 5 ms later
        (M + 60_000, "mail", "retried"): 1,
        (M + 60_000, "report", "fired"): 1,  # started 90 s after its due time
        (M + 60_000, "report", "late.inf"): 1,
        (M, "nightly", "missed"): 4,
    }


async def test_counts_the_store_refused_are_added_at_the_next_flush(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'd.db'}", namespace="n")
    counter = MinuteCounter()
    counter.started(WorkerEvent("started", "mail", "a", M, 1, lateness_ms=1.0))
    await counter.flush(store, M + 1_000)  # not open: refused, kept
    assert counter.counts() == {(M, "mail", "fired"): 1, (M, "mail", "late.1"): 1}
    await store.open()
    try:
        counter.started(WorkerEvent("started", "mail", "b", M, 1, lateness_ms=1.0))
        await counter.flush(store, M + 2_000)
        assert counter.counts() == {}
        assert await use(store, TELEMETRY).telemetry.counts_since(M) == {
            (M, "mail", "fired"): 2,
            (M, "mail", "late.1"): 2,
        }
    finally:
        await store.close()
