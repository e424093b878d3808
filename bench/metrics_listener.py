"""What the Prometheus listener costs a worker: events per second through it, and the time
to render a scrape.

    python bench/metrics_listener.py

A task that succeeds gives the listener two events (started, succeeded); one that fails
and is retried gives three (started, failed, retried). Each is emitted here through the
worker's own :class:`~duetime.events.Events`, as the executor does, with and without
the listener, so the difference is the listener's cost per task.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from prometheus_client import CollectorRegistry

from duetime.events import Events, Listener, WorkerEvent
from duetime.metrics import MetricsListener
from duetime.metrics.store import exposition

N = 200_000
TYPES = [f"type{n}" for n in range(10)]


class Nothing(Listener):
    """Overrides the same methods and does nothing: the cost of the seam alone."""

    def started(self, event: WorkerEvent) -> None: ...

    def succeeded(self, event: WorkerEvent) -> None: ...


def per_task_us(events: Events) -> float:
    """Microseconds per successful task: its two events built and emitted."""
    names = TYPES
    start = time.perf_counter()
    for i in range(N):
        name = names[i % 10]
        events.emit(WorkerEvent("started", name, "id", 0, 1, lateness_ms=3.2))
        events.emit(WorkerEvent("succeeded", name, "id", 0, 1, duration_ms=0.4))
    return (time.perf_counter() - start) / N * 1e6


def render_ms(listener: MetricsListener, registry: CollectorRegistry) -> float:
    for i in range(N // 10):
        name = TYPES[i % 10]
        listener.started(WorkerEvent("started", name, "id", 0, 1, lateness_ms=i % 500))
    start = time.perf_counter()
    for _ in range(100):
        body, _ = exposition(registry)
    took = (time.perf_counter() - start) / 100 * 1000
    lines = body.count(b"\n")
    print(f"scrape body: {len(body)} bytes, {lines} lines, {len(TYPES)} types")
    return took


def main() -> None:
    registry = CollectorRegistry()
    listener = MetricsListener(registry, TYPES)
    base = min(per_task_us(Events([Nothing()])) for _ in range(3))
    with_metrics = min(per_task_us(Events([listener])) for _ in range(3))
    print(f"events through a no-op listener: {base:.2f} us per task ({2e6 / base:,.0f} ev/s)")
    print(
        f"events through the metrics listener: {with_metrics:.2f} us per task "
        f"({2e6 / with_metrics:,.0f} ev/s); the listener adds {with_metrics - base:.2f} us"
    )
    other = CollectorRegistry()
    print(f"render a scrape: {render_ms(MetricsListener(other, TYPES), other):.2f} ms")


if __name__ == "__main__":
    main()
