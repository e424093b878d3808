"""The metrics listener's arithmetic: Prometheus' bucket bounds, sums, and clashes."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from duetime.events import WorkerEvent
from duetime.metrics import LATENESS_BUCKETS, MetricsListener


def samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_lateness_falls_in_the_first_bucket_whose_bound_it_does_not_exceed() -> None:
    registry = CollectorRegistry()
    listener = MetricsListener(registry)
    # 1 ms exactly is "le 0.001"; just above, the next bucket; early starts count as 0;
    # beyond 60 s, only +Inf.
    for lateness_ms in (1.0, 1.01, -3.0, 61_000.0):
        listener.started(WorkerEvent("started", "t", "id", 0, 1, lateness_ms=lateness_ms))
    got = samples(registry)

    def bucket(le: str) -> float:
        return got[("duetime_task_lateness_seconds_bucket", (("le", le), ("type", "t")))]

    assert LATENESS_BUCKETS[0] == 0.001 and LATENESS_BUCKETS[-1] == 60.0
    assert bucket("0.001") == 2  # -3 ms (as 0) and 1 ms
    assert bucket("0.0025") == 3
    assert bucket("60.0") == 3
    assert bucket("+Inf") == 4
    assert got[("duetime_task_lateness_seconds_count", (("type", "t"),))] == 4
    assert got[("duetime_task_lateness_seconds_sum", (("type", "t"),))] == pytest.approx(
        (1.0 + 1.01 + 0 + 61_000.0) / 1000
    )
    assert got[("duetime_running_tasks", (("type", "t"),))] == 4


def test_missed_ticks_add_their_count_and_types_are_labelled_apart() -> None:
    registry = CollectorRegistry()
    listener = MetricsListener(registry, ["quiet"])
    listener.missed_ticks(WorkerEvent("missed_ticks", "yearly", "newYear", 0, count=3))
    listener.missed_ticks(WorkerEvent("missed_ticks", "yearly", "newYear", 0, count=2))
    got = samples(registry)
    assert got[("duetime_missed_ticks_total", (("type", "yearly"),))] == 5
    assert got[("duetime_missed_ticks_total", (("type", "quiet"),))] == 0


def test_two_listeners_cannot_share_a_registry() -> None:
    registry = CollectorRegistry()
    MetricsListener(registry)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        MetricsListener(registry)
