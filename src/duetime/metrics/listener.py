"""The worker listener that counts tasks and times them, as Prometheus metrics."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from duetime.errors import AbortedRun
from duetime.events import Listener, WorkerEvent

#: Lateness buckets, in seconds (Prometheus' unit): 1 ms to 60 s, about 2.5x apart, so
#: that p99 can be told apart both for a worker on time to the millisecond and for one
#: seconds behind.
LATENESS_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)
#: Handler duration buckets, in seconds: the lateness ones, then up to the default handler
#: time limit (5 minutes).
DURATION_BUCKETS = (*LATENESS_BUCKETS, 120.0, 300.0)

#: The counters: attribute of a tally, metric name (``duetime_<name>_total``), help text.
COUNTERS = (
    ("fired", "tasks_fired", "Handlers started (every attempt)."),
    ("succeeded", "tasks_succeeded", "Handlers that returned."),
    ("failed", "tasks_failed", "Handlers that raised or timed out."),
    ("retried", "tasks_retried", "Failed attempts to be tried again."),
    ("aborted", "tasks_aborted", "Runs aborted (App.abort, or a cron schedule's cancel_other)."),
    (
        "dead_lettered",
        "tasks_dead_lettered",
        "Occurrences sent to the dead letters (retries used up, aborted, or a record that "
        "could not be used).",
    ),
    ("missed_ticks", "missed_ticks", "Cron ticks given up because no worker ran them in time."),
)


class _Histogram:
    """Observations per bucket (not cumulative; the last is +Inf) and their sum."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        # Prometheus' buckets are "less than or equal": the first bound >= the value.
        self.counts[bisect_left(self.bounds, seconds)] += 1
        self.sum += seconds

    def buckets(self) -> list[tuple[str, float]]:
        total = 0
        out: list[tuple[str, float]] = []
        for bound, count in zip((*self.bounds, float("inf")), self.counts, strict=True):
            total += count
            out.append(("+Inf" if bound == float("inf") else repr(bound), total))
        return out


class _Tally:
    """The numbers of one task type."""

    __slots__ = (
        "aborted",
        "dead_lettered",
        "duration",
        "failed",
        "fired",
        "lateness",
        "missed_ticks",
        "retried",
        "running",
        "succeeded",
    )

    def __init__(self) -> None:
        self.fired = self.succeeded = self.failed = self.retried = 0
        self.dead_lettered = self.missed_ticks = self.running = self.aborted = 0
        self.lateness = _Histogram(LATENESS_BUCKETS)
        self.duration = _Histogram(DURATION_BUCKETS)


class MetricsListener(Listener):
    """Counts and times a worker's tasks per type, and shows them to Prometheus.

    It is both a worker listener and a prometheus-client collector: events add to plain
    numbers (no lock: the worker tells its listeners in its event loop, one at a time), and
    a scrape builds the metric families from them. A scrape served in another thread reads
    them as they are, at most an event or two apart.

    "Fired" counts handlers started: every attempt, retries included, and not tasks claimed
    ahead of their due time that have not started yet. Lateness is how long after its due
    time a handler started. The running gauge counts handlers started and not yet ended.

    Args:
        registry: where to register; None to register it yourself (or not at all).
        types: task types whose series exist from the start, at zero (others appear on
            their first event).
    """

    def __init__(
        self, registry: CollectorRegistry | None = None, types: Iterable[str] = ()
    ) -> None:
        self._tallies: dict[str, _Tally] = {name: _Tally() for name in types}
        if registry is not None:
            registry.register(self)

    def _of(self, task_type: str) -> _Tally:
        tally = self._tallies.get(task_type)
        if tally is None:
            tally = self._tallies[task_type] = _Tally()
        return tally

    # -- events (the worker's hot path) -------------------------------------------------

    def started(self, event: WorkerEvent) -> None:
        tally = self._of(event.task_type)
        tally.fired += 1
        tally.running += 1
        if event.lateness_ms is not None:
            # An early claim starts on time; a timer firing a hair early is not "late".
            tally.lateness.observe(max(event.lateness_ms, 0.0) / 1000)

    def succeeded(self, event: WorkerEvent) -> None:
        self._ended(event).succeeded += 1

    def failed(self, event: WorkerEvent) -> None:
        tally = self._ended(event)
        if not isinstance(event.exception, AbortedRun):  # counted by aborted(), which follows
            tally.failed += 1

    def aborted(self, event: WorkerEvent) -> None:
        self._of(event.task_type).aborted += 1

    def _ended(self, event: WorkerEvent) -> _Tally:
        tally = self._of(event.task_type)
        tally.running -= 1
        if event.duration_ms is not None:
            tally.duration.observe(event.duration_ms / 1000)
        return tally

    def retried(self, event: WorkerEvent) -> None:
        self._of(event.task_type).retried += 1

    def dead_lettered(self, event: WorkerEvent) -> None:
        self._of(event.task_type).dead_lettered += 1

    def missed_ticks(self, event: WorkerEvent) -> None:
        self._of(event.task_type).missed_ticks += event.count

    # -- the collector ------------------------------------------------------------------

    def describe(self) -> Iterable[Metric]:
        return self._families({})

    def collect(self) -> Iterable[Metric]:
        return self._families(dict(self._tallies))

    @staticmethod
    def _families(tallies: dict[str, _Tally]) -> Iterator[Metric]:
        for attribute, name, doc in COUNTERS:
            counter = CounterMetricFamily(f"duetime_{name}", doc, labels=["type"])
            for task_type, tally in tallies.items():
                counter.add_metric([task_type], getattr(tally, attribute))
            yield counter
        for attribute, name, doc in (
            ("lateness", "task_lateness_seconds", "How long after its due time a handler started."),
            ("duration", "task_duration_seconds", "How long handlers ran, successful or not."),
        ):
            histogram = HistogramMetricFamily(f"duetime_{name}", doc, labels=["type"])
            for task_type, tally in tallies.items():
                observed: _Histogram = getattr(tally, attribute)
                histogram.add_metric([task_type], observed.buckets(), observed.sum)
            yield histogram
        running = GaugeMetricFamily(
            "duetime_running_tasks", "Handlers running now in this worker.", labels=["type"]
        )
        for task_type, tally in tallies.items():
            running.add_metric([task_type], tally.running)
        yield running
