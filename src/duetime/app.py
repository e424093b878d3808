"""The App: a Client with a registry (task types and features), the decorators that fill it,
and the workers made from it. Each feature's calls are a part of the App of their own
(``features/<name>/calls.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Unpack

from duetime.client import Client, ClientSettings
from duetime.errors import ConfigError, ValidationError
from duetime.events import Listener
from duetime.features.cron.calls import CronDecorator
from duetime.features.expiring.calls import ExpiringCalls
from duetime.features.expiring.feature import ExpiringFeature
from duetime.features.flow.calls import FlowCalls
from duetime.features.flow.feature import FlowFeature
from duetime.features.history.calls import HistoryCalls
from duetime.features.history.feature import HistoryFeature
from duetime.features.history.settings import check_setting
from duetime.features.keyevents.calls import KeyEventCalls
from duetime.features.keyevents.feature import KeyEventFeature
from duetime.features.pollers.calls import PollerCalls
from duetime.features.pollers.feature import PollerFeature
from duetime.features.results.calls import ResultCalls
from duetime.features.telemetry.calls import WatchCalls
from duetime.features.telemetry.feature import TelemetryFeature
from duetime.middleware import MiddlewareLike, check_middleware
from duetime.model import History, Pacing, TaskOptions, TaskPolicy
from duetime.probes.health import DEFAULT_HEALTH_HOST, DEFAULT_HEALTH_INTERVAL, WorkerHealth
from duetime.tasktype import Handler, TaskType, call_mode, gate_of
from duetime.validate import check_name, check_partitions, check_priority

if TYPE_CHECKING:
    from duetime.metrics import WorkerMetrics
    from duetime.sync import SyncClient
    from duetime.worker import Worker

#: The interface a worker serves its metrics on unless told: this machine only.
DEFAULT_METRICS_HOST = "127.0.0.1"


class App(
    CronDecorator,
    ExpiringCalls,
    PollerCalls,
    KeyEventCalls,
    HistoryCalls,
    ResultCalls,
    WatchCalls,
    FlowCalls,
    Client,
):
    """The registry of task types, cron schedules, expiring groups, pollers and key expiry
    handlers, and the entry point for producers and workers.

    Args:
        url: the store: ``redis://host:port/db``, ``rediss://...``, ``unix://...``,
            ``redis+sentinel://host:port,.../service/db``, ``redis+cluster://...``,
            ``postgresql://...`` or ``sqlite:///path``. None reads ``DUETIME_URL`` when the
            store is first needed, and without it uses the SQLite file ``duetime.db`` in
            the working directory.

    Keyword Args:
        namespace: keeps apps sharing one store apart.
        clock: where "now" comes from; by default the store's own clock.
        max_payload_bytes: the largest payload accepted, as JSON.
        allow_eviction: accept a Redis that evicts keys (loses tasks); refused otherwise.
        durability: ``"local"`` (default): a write returns once the store has it;
            ``"replicated"`` (Redis with replicas): once a replica has it too, so that an
            acknowledged write survives the loss of the primary.
        store: a store object to use instead of one made from ``url``.
        redis_credentials: on Redis, a callable (plain or async) returning ``(username,
            password)``, asked on each new connection in place of the URL's: for passwords
            that rotate (docs/choosing-a-store.md).
        history: how much of its run history each task type keeps (:class:`History`;
            the default: the last 1,000 runs, for at most 7 days), unless the type says
            (``@app.task(..., history=...)``); False keeps none.
        middleware: what wraps every handler's run in the app's workers
            (:class:`~duetime.Middleware`), the first outermost, around each type's own.

    The store is opened on first use, in the running event loop (a call from another loop
    later uses connections of that loop); ``async with app`` or
    ``await app.close()`` closes it. The calls on tasks (schedule, submit, get, ...) are
    :class:`~duetime.client.Client`'s.

    Raises:
        ConfigError: ``url`` is empty or its scheme names no store (``redsi://``), said as
            the App is made rather than at its first call.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        history: History | bool = True,
        middleware: Iterable[MiddlewareLike] = (),
        **settings: Unpack[ClientSettings],
    ) -> None:
        super().__init__(url, **settings)
        if check_setting("history", history) is None:
            raise ValidationError("history", "must be a duetime.History, True or False")
        registry = self.registry  # the client's, with its cron schedules
        registry.use_middleware(check_middleware(middleware))
        registry.add(ExpiringFeature())
        registry.add(PollerFeature())
        registry.add(KeyEventFeature())
        registry.add(TelemetryFeature())
        registry.add(FlowFeature())
        registry.add(HistoryFeature(self.types, history))

    # -- task types -------------------------------------------------------------------------

    def task(self, name: str, **options: Unpack[TaskOptions]) -> Callable[[Handler], TaskType]:
        """Register the decorated function as the handler of task type ``name``.

        The handler takes ``(payload)`` or ``(payload, ctx)`` and may be ``async def`` or a
        plain ``def`` (run in a thread pool). The options (:class:`~duetime.TaskOptions`)
        are the policy's (:class:`~duetime.TaskPolicy`: ``concurrency``, ``timeout``,
        ``retries``, ``backoff``, ``lease``, ``max_stalls``, ``delivery``), ``pacing``
        (:class:`~duetime.Pacing`), ``partitions``: how many hash slots the type's tasks
        are spread over (on Redis Cluster, several primaries), the same in every process,
        and ``history``: how much of its run history it keeps (a
        :class:`~duetime.History`, True for the defaults, False for none; by default the
        app's). ``retries`` defaults to 3, or 0 with at-most-once delivery. ``rate``
        (``"100/s"``, ``"N/m"``, ``"N/h"`` or a :class:`~duetime.Rate`) and
        ``global_concurrency`` limit the type's starts and runs across every worker (see
        the flow control guide); ``priority`` (-100 to 100) is that of its tasks scheduled
        without one; ``middleware`` (:class:`~duetime.Middleware`) wraps its handler's
        runs, inside the App's.

        Raises:
            ValidationError: a bad name or option, or a name already registered.
        """
        check_name("task_type", name)
        given: dict[str, Any] = dict(options)
        pacing = given.pop("pacing", None) or Pacing()
        partitions = check_partitions(given.pop("partitions", 1))
        history = check_setting("history", given.pop("history", None))
        priority = check_priority(given.pop("priority", 0))
        middleware = check_middleware(given.pop("middleware", ()))
        policy = TaskPolicy.from_options(**given)
        gate_of(policy, partitions)  # refused here, at registration, rather than when used
        types = self.types

        def register(fn: Handler) -> TaskType:
            mode = call_mode(fn, cron=False)
            task_type = TaskType(name, None, policy, pacing, partitions=partitions)
            task_type.history = history
            task_type.priority = priority
            task_type.middleware = middleware
            task_type.bind(fn, mode)
            task_type.scheduler = types.scheduler
            return types.add(task_type)

        return register

    def add_listener(self, listener: Listener) -> Listener:
        """Give every worker of this app ``listener`` (told before the worker's own);
        returns it."""
        if not isinstance(listener, Listener):
            raise TypeError(f"{listener!r} is not a duetime.Listener")
        self.registry.listeners.append(listener)
        return listener

    # -- running ------------------------------------------------------------------------

    def worker(
        self,
        types: Sequence[str] | None = None,
        *,
        metrics_port: int | None = None,
        metrics_host: str = DEFAULT_METRICS_HOST,
        health_port: int | None = None,
        health_host: str | None = None,
        health_interval: float = DEFAULT_HEALTH_INTERVAL,
        **options: Any,
    ) -> Worker:
        """A worker for ``types`` (default: every type with a handler); see
        :class:`~duetime.Worker` for the options.

        With ``metrics_port`` (0: a free one) it serves Prometheus metrics while it runs, on
        ``metrics_host``: needs ``duetime[metrics]``. With ``health_port`` it answers
        ``/healthz`` and ``/readyz`` (:class:`~duetime.probes.health.WorkerHealth`; the store may
        go ``health_interval`` seconds without answering) on ``health_host`` (default
        127.0.0.1); the same port as ``metrics_port`` means one server answering all three
        paths, on ``metrics_host``. ``worker.find_listener(WorkerHealth).port`` is the port
        picked for port 0.

        Raises:
            ConfigError: ``metrics_port`` without prometheus-client installed.
            ValidationError: a bad type, port or option.
        """
        from duetime.worker import Worker

        worker = Worker(self, types, **options)
        metrics = None
        if metrics_port is not None:
            metrics = _metrics(self, worker.types, metrics_host, metrics_port)
            worker.add_metrics(metrics)
        if health_port is not None:
            worker.add_listener(_health(worker, metrics, health_host, health_port, health_interval))
        return worker

    async def serve(self, types: Sequence[str] | None = None, **options: Any) -> None:
        """Run a worker in this event loop until it is stopped or cancelled."""
        await self.worker(types, **options).run()

    def run(
        self, types: Sequence[str] | None = None, *, gc_tuning: bool = True, **options: Any
    ) -> Worker:
        """Run a worker until SIGTERM or SIGINT, then shut down gracefully; with
        ``burst=True``, until nothing is due and nothing runs (or a signal). Returns the
        worker once it stopped: its ``dead_lettered`` says how many occurrences went to the
        dead letters meanwhile.

        The worker owns the process: unless ``gc_tuning`` is False, the garbage collector
        skips the objects that exist when the worker starts and collects young objects
        less often (``duetime.worker.runtime.tune_gc``). ``options`` go to :meth:`worker`.
        """
        from duetime.worker.runtime import run_worker

        worker = self.worker(types, **options)
        run_worker(worker, gc_tuning=gc_tuning)
        return worker

    def sync(self) -> SyncClient:
        """A blocking client with the same calls, for code that is not async."""
        from duetime.sync import SyncClient

        return SyncClient(self)


def _health(
    worker: Worker, metrics: WorkerMetrics | None, host: str | None, port: int, interval: float
) -> WorkerHealth:
    """The health checks of ``worker``: on the metrics' server when they share its port."""
    if metrics is not None and port == metrics.port:
        if host not in (None, metrics.host):
            raise ValidationError(
                "health_host",
                f"must be metrics_host ({metrics.host}) or not given: one server answers "
                f"both on port {port}",
            )
        return WorkerHealth(worker, metrics.endpoint, owns_endpoint=False, interval=interval)
    from duetime.probes.endpoint import Endpoint  # only for a worker that serves the checks

    endpoint = Endpoint(DEFAULT_HEALTH_HOST if host is None else host, port, {}, what="health")
    return WorkerHealth(worker, endpoint, interval=interval)


def _metrics(app: App, types: Sequence[str], host: str, port: int) -> WorkerMetrics:
    try:
        from duetime.metrics import WorkerMetrics
    except ImportError as exc:  # prometheus-client is not installed
        raise ConfigError(str(exc)) from None
    return WorkerMetrics(app, list(types), host=host, port=port)
