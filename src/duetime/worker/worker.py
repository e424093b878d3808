"""The worker: claims due tasks in batches, runs their handlers, settles outcomes in batches.

One claim loop per task type (:mod:`.runner`), one flusher settling outcomes
(:mod:`.outbox`), one renewer of leases (:mod:`.leases`), one listener for wake-ups, and
one upkeep loop, all in one task group.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from duetime.clock import RESAMPLE_SECONDS, Clock, StoreClock
from duetime.errors import ConfigError, UnknownTaskType, ValidationError
from duetime.stores.base import Store
from duetime.triggers.keyspace import KeyEvents
from duetime.version import VERSION
from duetime.worker.counting import MinuteCounter
from duetime.worker.events import Events, Listener
from duetime.worker.executor import Executor
from duetime.worker.failures import log_store_failure
from duetime.worker.heartbeat import Heartbeat
from duetime.worker.leases import renew_loop
from duetime.worker.outbox import Outbox
from duetime.worker.pollers import Hastener
from duetime.worker.runner import TypeRunner

if TYPE_CHECKING:
    from duetime.client import Client
    from duetime.metrics import WorkerMetrics

log = logging.getLogger(__name__)

#: How long running handlers may finish after a stop before they are cut short and
#: their tasks handed back.
DEFAULT_GRACE_SECONDS = 30.0
#: How often a running worker samples the store's clock and reads its settings again.
UPKEEP_SECONDS = RESAMPLE_SECONDS
#: The interface a worker serves its metrics on unless told: this machine only.
DEFAULT_METRICS_HOST = "127.0.0.1"


class Worker:
    """Runs the handlers of some task types until stopped.

    Args:
        app: the app whose task types and store to use.
        types: the task types to run; default every type with a handler.
        grace: seconds running handlers get to finish after :meth:`stop`.
        listeners: :class:`~duetime.Listener` objects told of each claim, run, retry,
            dead letter and missed tick.
        monitored: keep a heartbeat record and per-minute counts in the store, for
            ``duetime workers``, ``duetime stats`` and the dashboard (:mod:`duetime.monitor`).
        metrics_port: serve Prometheus metrics on this port (0: a free one) while the
            worker runs; needs ``duetime[metrics]``. See :attr:`metrics`.
        metrics_host: the interface to serve them on (default: this machine only).

    Raises:
        ConfigError: ``metrics_port`` without prometheus-client installed.
    """

    def __init__(
        self,
        app: Client,
        types: Sequence[str] | None = None,
        *,
        grace: float = DEFAULT_GRACE_SECONDS,
        listeners: Iterable[Listener] = (),
        monitored: bool = True,
        metrics_port: int | None = None,
        metrics_host: str = DEFAULT_METRICS_HOST,
    ) -> None:
        self.app = app
        names = (
            list(types)
            if types is not None
            else [name for name, t in app.types.items() if t.handler is not None]
        )
        names = app.pollers.expand(names)
        if not names:
            raise ValidationError("types", "no task type with a handler to run")
        hastened = [p for p in app.pollers.by_name.values() if p.handler_type and p.name in names]
        self._hastener = Hastener(hastened, app.open, lambda: app.clock.now_ms())
        #: This worker's heartbeat record in the store.
        self.heartbeat = Heartbeat(names, self._state, app.namespace, VERSION)
        #: This worker's counts per minute (poller errors included), or None.
        self.counter = MinuteCounter() if monitored else None
        own: list[Listener] = [self.heartbeat, self.counter] if self.counter else []
        #: The worker's metrics (its registry, and the port once running), or None.
        self.metrics = None
        if metrics_port is not None:
            self.metrics = _metrics(app, names, metrics_host, metrics_port)
            own.append(self.metrics.listener)
        self.events = Events([*listeners, *own, *([self._hastener] if hastened else [])])
        self._runners: dict[str, TypeRunner] = {}
        for name in names:
            task_type = app.task_type(name)
            if task_type.handler is None:
                raise ValidationError("types", f"{name!r} is declared without a handler")
            self._runners[name] = TypeRunner(task_type, self.events)
        self.grace = grace
        self.started = asyncio.Event()

    # -- control ------------------------------------------------------------------------

    def stop(self, *, now: bool = False) -> None:
        """Stop claiming, let running handlers finish within the grace period, then return.

        With ``now``, running handlers are cut short at once and their tasks handed back.
        """
        for runner in self._runners.values():
            runner.stop(now=now)

    def pause(self, task_type: str) -> None:
        """Stop claiming tasks of one type; handlers already running finish."""
        self._runner(task_type).paused = True

    def resume(self, task_type: str) -> None:
        """Claim tasks of a paused type again."""
        runner = self._runner(task_type)
        runner.paused = False
        runner.signal.set()

    def _runner(self, task_type: str) -> TypeRunner:
        runner = self._runners.get(task_type)
        if runner is None:
            raise UnknownTaskType(task_type, tuple(self._runners))
        return runner

    # The names of the Redis sorted-set scheduler whose API duetime keeps in spirit.
    stop_scheduled_tasks = pause
    start_scheduled_tasks = resume

    @property
    def running(self) -> dict[str, int]:
        """How many handlers of each type are running now."""
        return {name: r.running for name, r in self._runners.items()}

    def _state(self) -> tuple[dict[str, int], int | None]:
        """What the heartbeat tells: handlers running by type, when a claim last brought
        tasks."""
        claims = [r.last_claim_ms for r in self._runners.values() if r.last_claim_ms]
        return self.running, max(claims, default=None)

    # -- main ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Run until :meth:`stop` is called; then finish or hand back every claimed task."""
        app = self.app
        store = await app.open()
        await app.named_triggers.write_declared(only=self._runners)
        pollers = app.pollers.of(self._runners)
        await app.pollers.write_missing(store, pollers, app.clock.now_ms())
        for warning in store.durability_warnings():
            log.warning("%s", warning)
        if self.metrics is not None:
            await self.metrics.start()  # before anything needs closing: a port in use stops here
        runners = list(self._runners.values())
        sync_slots = sum(
            r.task_type.policy.concurrency for r in runners if not r.task_type.is_async
        )
        pool = None
        if sync_slots:
            pool = ThreadPoolExecutor(sync_slots, thread_name_prefix="duetime-handler")
        clock = app.clock
        executor = Executor(
            clock=clock,
            max_payload_bytes=app.max_payload_bytes,
            pool=pool,
            events=self.events,
            app=app,
        )
        outbox = Outbox(clock, self.events)
        for runner in runners:
            runner.attach(clock, executor, outbox)
        key_routes = [r for r in app.key_routes if r.task_type in self._runners]
        if key_routes:
            # Key expiry handlers need Redis to publish expiries: the log says when it will not.
            await _log_problems(
                store.enable_key_events, "check that the store publishes key expiries"
            )
        log.info("worker started: types %s, namespace %s", ", ".join(self._runners), app.namespace)
        app.pollers.workers_running += 1
        if self.counter is not None:
            app.events.on("error", self.counter.poller_error)
        try:
            async with asyncio.TaskGroup() as group:
                helpers = [
                    group.create_task(store.listen(self._on_wake)),
                    group.create_task(renew_loop(store, runners, clock)),
                    group.create_task(outbox.flush_loop(store)),
                    group.create_task(_upkeep_loop(store, clock)),
                ]
                if key_routes:
                    helpers.append(group.create_task(KeyEvents(key_routes, store, clock).run()))
                helpers += (
                    group.create_task(loop)
                    for listener in self.events.listeners
                    for loop in listener.loops(store, clock)
                )
                loops = [group.create_task(r.claim_loop(store)) for r in runners]
                self.started.set()
                await asyncio.gather(*loops)
                await self._drain()
                await outbox.final_flush(store)
                await _cancel_until_done(helpers)
                for listener in self.events.listeners:
                    finish = functools.partial(_finished, listener, store, clock)
                    await _log_problems(finish, "finish the worker's records")
        finally:
            app.pollers.workers_running -= 1
            if self.counter is not None:
                app.events.off("error", self.counter.poller_error)
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
            if self.metrics is not None:
                await self.metrics.close()
            log.info("worker stopped")

    def _on_wake(self, task_type: str, due_ms: int) -> None:
        if task_type == "*":
            for runner in self._runners.values():
                runner.signal.set()
        elif (one := self._runners.get(task_type)) is not None:
            one.signal.set()

    async def _drain(self) -> None:
        tasks = [task for r in self._runners.values() for task in r.unfinished()]
        if not tasks:
            return
        log.info("waiting up to %.1f s for %d running handlers", self.grace, len(tasks))
        _, pending = await asyncio.wait(tasks, timeout=self.grace)
        for task in pending:
            task.cancel()
        if pending:
            log.warning(
                "%d handlers cut short at the end of the grace period; their tasks are handed back",
                len(pending),
            )
            await asyncio.wait(pending)


def _metrics(app: Client, types: list[str], host: str, port: int) -> WorkerMetrics:
    try:
        from duetime.metrics import WorkerMetrics
    except ImportError as exc:  # prometheus-client is not installed
        raise ConfigError(str(exc)) from None
    return WorkerMetrics(app, types, host=host, port=port)


async def _log_problems(check: Callable[[], Awaitable[list[str]]], what: str) -> None:
    """Log as errors the problems ``check`` finds with the store (settings that lose tasks
    or events), or that it could not ``what``."""
    try:
        problems = await check()
    except Exception as exc:
        log_store_failure(exc, "could not %s: %s", what, exc)
        return
    for problem in problems:
        log.error("%s", problem)


async def _finished(listener: Listener, store: Store, clock: Clock) -> list[str]:
    await listener.finish(store, clock)
    return []


async def _upkeep_loop(store: Store, clock: Clock) -> None:
    """Once a minute: sample the store's clock again, and read the store's settings, so
    that one reconfigured to lose tasks since the worker started (a Redis switched to
    evicting keys) gets an error in the log."""

    async def check() -> list[str]:
        if isinstance(clock, StoreClock):
            await clock.sync()
        return await store.check_settings()

    while True:
        await asyncio.sleep(UPKEEP_SECONDS)
        await _log_problems(check, "read the store's clock or settings")


async def _cancel_until_done(tasks: list[asyncio.Task[Any]]) -> None:
    """Cancel tasks and wait for them, cancelling again if one swallowed the cancellation.

    On Python 3.11, asyncio.wait_for (used inside redis-py) can swallow a cancellation that
    arrives as its inner call completes; a plain cancel() could then leave a task running.
    """
    pending = {task for task in tasks if not task.done()}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=0.5)
