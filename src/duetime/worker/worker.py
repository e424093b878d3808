"""The worker: claims due tasks in batches, runs their handlers, settles outcomes in batches.

One claim loop per task type (:mod:`.runner`), one flusher settling outcomes
(:mod:`.outbox`), one renewer of leases (:mod:`.renewal`), one listener for wake-ups, and
one upkeep loop, all in one task group.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import socket
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

from duetime.clock import Clock
from duetime.errors import UnknownTaskType, ValidationError
from duetime.events import Events, Listener, WorkerEvent
from duetime.features.base import WorkerRun
from duetime.stores.base import Store
from duetime.validate import duration_ms
from duetime.worker.abort import AbortWatch
from duetime.worker.burst import Burst, run_burst
from duetime.worker.executor import Executor
from duetime.worker.outbox import Outbox
from duetime.worker.renewal import renew_loop
from duetime.worker.runner import TypeRunner
from duetime.worker.upkeep import (
    cancel_until_done,
    close_listener,
    finish_listener,
    log_problems,
    upkeep_loop,
)
from duetime.worker.wrapped import chain_of

if TYPE_CHECKING:
    from duetime.client import Client
    from duetime.metrics import WorkerMetrics
    from duetime.registry import Registry
    from duetime.tasktype import TaskType

log = logging.getLogger(__name__)

L = TypeVar("L", bound=Listener)

#: How long running handlers may finish after a stop before they are cut short and
#: their tasks handed back.
DEFAULT_GRACE_SECONDS = 30.0


class Host(Protocol):
    """What a worker uses of its app: the registry, the store and its clock, the settings."""

    @property
    def registry(self) -> Registry: ...

    @property
    def namespace(self) -> str: ...

    @property
    def max_payload_bytes(self) -> int: ...

    @property
    def clock(self) -> Clock: ...

    async def open(self) -> Store: ...

    async def close(self) -> None: ...

    def task_type(self, name: object) -> TaskType: ...


class Worker:
    """Runs the handlers of some task types until stopped.

    Args:
        app: the app whose registry (task types, features, listeners) and store to use.
        types: the task types to run; default every type with a handler.
        grace: seconds (or a timedelta) running handlers get to finish after :meth:`stop`;
            0 cuts them short at once. Not a finite duration: ValidationError.
        listeners: :class:`~duetime.Listener` objects told of each claim, run, retry,
            dead letter and missed tick (after the app's own, :meth:`App.add_listener`).
        monitored: keep a heartbeat record and per-minute counts in the store, for
            ``duetime workers``, ``duetime stats`` and the dashboard.
        burst: run what is due now, then stop once nothing is due and nothing runs
            (``duetime worker --burst``): True, or a :class:`~duetime.worker.burst.Burst`
            with a cap on the runs.

    Attributes:
        id: this worker's id, ``host-pid-random``: unique among the live workers.
        metrics: the worker's Prometheus metrics (see :meth:`App.worker`), or None.
        dead_lettered: how many occurrences went to the dead letters in its last
            :meth:`run` (out of retries, aborted, or unreadable).
    """

    def __init__(
        self,
        app: Host,
        types: Sequence[str] | None = None,
        *,
        grace: float | timedelta = DEFAULT_GRACE_SECONDS,
        listeners: Iterable[Listener] = (),
        monitored: bool = True,
        burst: Burst | bool = False,
    ) -> None:
        self.app = app
        if not isinstance(burst, Burst | bool):
            raise ValidationError("burst", "must be True, False or a duetime.worker.Burst")
        self.burst = Burst() if burst is True else burst or None
        self.dead_lettered = 0
        registry = app.registry
        names = (
            list(types)
            if types is not None
            else [name for name, t in registry.types.items() if t.handler is not None]
        )
        for feature in registry:
            names = feature.worker_types(names)
        names = list(dict.fromkeys(names))
        if not names:
            raise ValidationError("types", "no task type with a handler to run")
        self.id = f"{socket.gethostname()}-{os.getpid()}-{os.urandom(3).hex()}"
        self.monitored = monitored
        self._listeners = [*registry.listeners, *listeners]
        for listener in self._listeners:
            if not isinstance(listener, Listener):
                raise TypeError(f"{listener!r} is not a duetime.Listener")
        self.metrics: WorkerMetrics | None = None
        self._runners: dict[str, TypeRunner] = {}
        for name in names:
            task_type = app.task_type(name)
            if task_type.handler is None:
                raise ValidationError("types", f"{name!r} is declared without a handler")
            self._runners[name] = TypeRunner(task_type)
        # Seconds, finite and not negative (0: cut handlers short at once on stop).
        self.grace = duration_ms("grace", grace, allow_zero=True) / 1000
        self.started = asyncio.Event()

    @property
    def types(self) -> list[str]:
        """The task types this worker runs."""
        return list(self._runners)

    def add_metrics(self, metrics: WorkerMetrics) -> None:
        """Serve ``metrics`` while the worker runs and count its events in them (before
        it runs)."""
        self.metrics = metrics
        self._listeners += (metrics, metrics.listener)

    def add_listener(self, listener: L) -> L:
        """Tell ``listener`` of this worker's events and life too (before it runs); returns
        it."""
        if not isinstance(listener, Listener):
            raise TypeError(f"{listener!r} is not a duetime.Listener")
        self._listeners.append(listener)
        return listener

    def find_listener(self, kind: type[L]) -> L | None:
        """The first of this worker's own listeners that is a ``kind`` (a
        :class:`~duetime.probes.health.WorkerHealth`, say), or None."""
        return next((x for x in self._listeners if isinstance(x, kind)), None)

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
    def stopping(self) -> bool:
        """Whether :meth:`stop` was called: the worker claims no more and its handlers
        finish."""
        return any(r.stopping for r in self._runners.values())

    @property
    def running(self) -> dict[str, int]:
        """How many handlers of each type are running now."""
        return {name: r.running for name, r in self._runners.items()}

    def status(self) -> tuple[dict[str, int], int | None]:
        """What the heartbeat tells: handlers running by type, when a claim last brought
        tasks."""
        claims = [r.last_claim_ms for r in self._runners.values() if r.last_claim_ms]
        return self.running, max(claims, default=None)

    # -- main ---------------------------------------------------------------------------

    async def write_declared(self) -> None:
        """Write what the app's features declare for this worker's types (cron schedules,
        pollers' tasks), as :meth:`run` does first, and run nothing: a test harness does so
        as it starts, so that the first cron tick comes from its start time."""
        app = self.app
        run = self._worker_run(await app.open(), app.clock)
        for feature in app.registry:
            await feature.start(run)  # the listeners it returns are a run's: none started

    def _worker_run(self, store: Store, clock: Clock) -> WorkerRun:
        app = self.app
        names = tuple(self._runners)
        return WorkerRun(store, clock, names, app.namespace, self.id, self.status, self.monitored)

    async def run(self) -> None:
        """Run until :meth:`stop` is called (in a burst, until nothing is due and nothing
        runs); then finish or hand back every claimed task.

        Raises:
            StoreError: a burst ended because its store failed again and again (the
                leases of what ran but was not settled expire, and those tasks run again).
        """
        app = self.app
        store = await app.open()
        clock = app.clock
        run = self._worker_run(store, clock)
        self.dead_lettered = 0
        listeners = [*self._listeners, _DeadLetters(self)]
        for feature in app.registry:
            listeners += await feature.start(run)
        records = app.registry.records(run)  # the types whose runs the settles record
        for warning in store.durability_warnings():
            log.warning("%s", warning)
        events = Events(listeners)
        runners = list(self._runners.values())
        pool = _thread_pool(runners)
        middleware = app.registry.middleware
        chains = {r.name: chain_of(middleware, r.task_type.middleware) for r in runners}
        executor = Executor(
            clock=clock,
            max_payload_bytes=app.max_payload_bytes,
            pool=pool,
            events=events,
            app=cast("Client", app),  # handed to handlers in their Context, nothing else
            grace=self.grace,
            noting=records,
            chains={name: chain for name, chain in chains.items() if chain},
        )
        outbox = Outbox(clock, events, records)
        for runner in runners:
            runner.attach(clock, events, executor, outbox, records.get(runner.name))
        started: list[Listener] = []
        try:
            for listener in listeners:  # a port in use (metrics) stops here, before claims
                await listener.start(store, clock)
                started.append(listener)
            log.info(
                "worker started: types %s, namespace %s%s",
                ", ".join(self._runners),
                app.namespace,
                "" if self.burst is None else " (a burst: until nothing is due)",
            )
            await self._run(store, clock, runners, outbox, listeners)
        finally:
            for listener in reversed(started):
                await log_problems(close_listener(listener), "release a listener's resources")
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
            log.info("worker stopped")

    async def _run(
        self,
        store: Store,
        clock: Clock,
        runners: list[TypeRunner],
        outbox: Outbox,
        listeners: list[Listener],
    ) -> None:
        failure = None
        # A burst settles and claims as runs end: of the wake-ups it wants abort signals only.
        aborts = AbortWatch(runners, self.grace, self._on_wake if self.burst is None else None)
        async with asyncio.TaskGroup() as group:
            helpers = [
                group.create_task(renew_loop(store, runners, clock)),
                group.create_task(aborts.loop(store)),
                group.create_task(store.listen(aborts.on_wake)),
                group.create_task(upkeep_loop(store, clock)),
            ]
            if self.burst is None:
                helpers.append(group.create_task(outbox.flush_loop(store)))
            helpers += (
                group.create_task(loop)
                for listener in listeners
                for loop in listener.loops(store, clock)
            )
            if self.burst is None:
                loops = [group.create_task(r.claim_loop(store)) for r in runners]
                self.started.set()
                await asyncio.gather(*loops)
            else:
                self.started.set()
                failure = await run_burst(self.burst, store, runners, outbox, listeners)
            await self._drain()
            if failure is None:  # else the store failed again and again: the leases expire
                await outbox.final_flush(store)
            await cancel_until_done(helpers)
            for listener in listeners:
                finish = functools.partial(finish_listener, listener, store, clock)
                await log_problems(finish, "finish the worker's records")
        if failure is not None:  # raised once the worker's loops are over, outside the group
            raise failure

    def _on_wake(self, task_type: str, due_ms: int) -> None:
        if task_type == "*":
            for runner in self._runners.values():
                runner.signal.set()
        elif (one := self._runners.get(task_type)) is not None:
            one.signal.set()

    async def _drain(self) -> None:
        tasks = self._unfinished()
        if not tasks:
            return
        log.info("waiting up to %.1f s for %d running handlers", self.grace, len(tasks))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.grace
        pending = tasks
        # Again until none is left: a batch whose run waits goes on in a new task.
        while pending and (left := deadline - loop.time()) > 0:
            await asyncio.wait(pending, timeout=left)
            pending = self._unfinished()
        if not pending:
            return
        for task in pending:
            task.cancel()
        log.warning(
            "%d handlers cut short at the end of the grace period; their tasks are handed back",
            len(pending),
        )
        await asyncio.wait(pending)

    def _unfinished(self) -> set[asyncio.Task[None]]:
        return {task for r in self._runners.values() for task in r.unfinished()}


class _DeadLetters(Listener):
    """Counts a worker's dead letters (a burst's exit code)."""

    def __init__(self, worker: Worker) -> None:
        self._worker = worker

    def dead_lettered(self, event: WorkerEvent) -> None:
        self._worker.dead_lettered += 1


def _thread_pool(runners: list[TypeRunner]) -> ThreadPoolExecutor | None:
    """The threads of the plain ``def`` handlers, one per slot (None without any)."""
    slots = sum(r.task_type.policy.concurrency for r in runners if not r.task_type.is_async)
    return ThreadPoolExecutor(slots, thread_name_prefix="duetime-handler") if slots else None
