"""The worker listener that counts tasks and times them in Prometheus metrics."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from duetime.worker.events import Listener, WorkerEvent

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


class Families:
    """The metric families of one worker, labelled by task type."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def counter(name: str, doc: str) -> Counter:
            return Counter(f"duetime_{name}", doc, ["type"], registry=registry)

        def histogram(name: str, doc: str, buckets: tuple[float, ...]) -> Histogram:
            return Histogram(name, doc, ["type"], registry=registry, buckets=buckets)

        self.fired = counter("tasks_fired", "Handlers started (every attempt).")
        self.succeeded = counter("tasks_succeeded", "Handlers that returned.")
        self.failed = counter("tasks_failed", "Handlers that raised or timed out.")
        self.retried = counter("tasks_retried", "Failed attempts to be tried again.")
        self.dead_lettered = counter(
            "tasks_dead_lettered",
            "Occurrences sent to the dead letters (retries used up, aborted, or a record "
            "that could not be used).",
        )
        self.missed_ticks = counter(
            "missed_ticks", "Cron ticks given up because no worker ran them in time."
        )
        self.lateness = histogram(
            "duetime_task_lateness_seconds",
            "How long after its due time a handler started.",
            LATENESS_BUCKETS,
        )
        self.duration = histogram(
            "duetime_task_duration_seconds",
            "How long handlers ran, successful or not.",
            DURATION_BUCKETS,
        )
        self.running = Gauge(
            "duetime_running_tasks",
            "Handlers running now in this worker.",
            ["type"],
            registry=registry,
        )


class _Series:
    """The metrics of one task type, their label looked up once (the hot path)."""

    __slots__ = (
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

    def __init__(self, families: Families, task_type: str) -> None:
        self.fired = families.fired.labels(task_type)
        self.succeeded = families.succeeded.labels(task_type)
        self.failed = families.failed.labels(task_type)
        self.retried = families.retried.labels(task_type)
        self.dead_lettered = families.dead_lettered.labels(task_type)
        self.missed_ticks = families.missed_ticks.labels(task_type)
        self.lateness = families.lateness.labels(task_type)
        self.duration = families.duration.labels(task_type)
        self.running = families.running.labels(task_type)


class MetricsListener(Listener):
    """Keeps a worker's counts and timings per task type in ``registry``.

    "Fired" counts handlers started: every attempt, retries included, and not tasks claimed
    ahead of their due time that have not started yet. Lateness is how long after its due
    time a handler started. The running gauge counts handlers started and not yet ended.

    Args:
        registry: where the metrics are registered (one per worker: two listeners cannot
            share one, as their names would clash).
        types: task types whose series exist from the start, at zero (others appear on
            their first event).
    """

    def __init__(self, registry: CollectorRegistry, types: Iterable[str] = ()) -> None:
        self.families = Families(registry)
        self._series: dict[str, _Series] = {}
        for name in types:
            self._of(name)

    def _of(self, task_type: str) -> _Series:
        series = self._series.get(task_type)
        if series is None:
            series = self._series[task_type] = _Series(self.families, task_type)
        return series

    def started(self, event: WorkerEvent) -> None:
        series = self._of(event.task_type)
        series.fired.inc()
        series.running.inc()
        if event.lateness_ms is not None:
            # An early claim starts on time; a timer firing a hair early is not "late".
            series.lateness.observe(max(event.lateness_ms, 0.0) / 1000)

    def succeeded(self, event: WorkerEvent) -> None:
        self._ended(event).succeeded.inc()

    def failed(self, event: WorkerEvent) -> None:
        self._ended(event).failed.inc()

    def _ended(self, event: WorkerEvent) -> _Series:
        series = self._of(event.task_type)
        series.running.dec()
        if event.duration_ms is not None:
            series.duration.observe(event.duration_ms / 1000)
        return series

    def retried(self, event: WorkerEvent) -> None:
        self._of(event.task_type).retried.inc()

    def dead_lettered(self, event: WorkerEvent) -> None:
        self._of(event.task_type).dead_lettered.inc()

    def missed_ticks(self, event: WorkerEvent) -> None:
        self._of(event.task_type).missed_ticks.inc(event.count)
