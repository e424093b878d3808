"""The worker: claims due tasks in batches, runs their handlers, settles outcomes in batches.

One claim loop per task type sleeps until the earliest due time it knows of, and is woken
early by the store when an earlier task arrives. Outcomes are gathered while a settle call
is in flight and sent together by one flusher (a group commit), so a busy worker spends a
round trip per batch, never per task. One renewer extends the leases of everything held.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from duetime.backoff import backoff_delay
from duetime.clock import RESAMPLE_SECONDS, StoreClock
from duetime.codec import duration_ms
from duetime.errors import StoreError, UnknownTaskType, ValidationError
from duetime.execute import Executor
from duetime.stores.base import Claim, Outcome, Store

if TYPE_CHECKING:
    from duetime.app import App
    from duetime.tasktype import TaskType

log = logging.getLogger(__name__)

#: How long running handlers may finish after a stop before they are cut short and
#: their tasks handed back.
DEFAULT_GRACE_SECONDS = 30.0
#: Back-off after a store error: first wait, and the cap.
ERROR_BACKOFF_FIRST = 0.05
ERROR_BACKOFF_CAP = 5.0
#: How often a running worker samples the store's clock and reads its settings again.
UPKEEP_SECONDS = RESAMPLE_SECONDS
#: Settling at shutdown gives up after this many failed tries (the leases then expire and
#: the tasks run again elsewhere: nothing is lost).
FINAL_SETTLE_TRIES = 5


@dataclass(eq=False, slots=True)
class _Run:
    claim: Claim
    early: bool = False  # claimed before it was due (the look-ahead): wait for its time
    task: asyncio.Task[None] | None = None
    finished: bool = False


@dataclass(eq=False)
class _Runner:
    """The state of one task type in this worker."""

    task_type: TaskType
    lease_ms: int
    timeout: float | None
    active: dict[int, _Run] = field(default_factory=dict)  # by token: held until settled
    running: int = 0  # handlers not yet finished
    signal: asyncio.Event = field(default_factory=asyncio.Event)
    paused: bool = False
    waiting_for_slot: bool = False


def _log_store_failure(exc: Exception, message: str, *args: object) -> None:
    """A store error is expected now and then (logged without a trace); anything else is a
    bug, logged with its traceback, but it still does not stop the worker."""
    if isinstance(exc, StoreError):
        log.warning(message, *args)
    else:
        log.exception(message, *args)


def _backoff(failures: int) -> float:
    return backoff_delay(failures, ERROR_BACKOFF_FIRST, ERROR_BACKOFF_CAP)


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


class Worker:
    """Runs the handlers of some task types until stopped.

    Args:
        app: the app whose task types and store to use.
        types: the task types to run; default every type with a handler.
        grace: seconds running handlers get to finish after :meth:`stop`.
    """

    def __init__(
        self, app: App, types: Sequence[str] | None = None, *, grace: float = DEFAULT_GRACE_SECONDS
    ) -> None:
        self.app = app
        names = (
            list(types)
            if types is not None
            else [name for name, t in app.types.items() if t.handler is not None]
        )
        if not names:
            raise ValidationError("types", "no task type with a handler to run")
        self._runners: dict[str, _Runner] = {}
        for name in names:
            task_type = app._type(name)
            if task_type.handler is None:
                raise ValidationError("types", f"{name!r} is declared without a handler")
            policy = task_type.policy
            timeout = None if policy.timeout is None else policy.timeout.total_seconds()
            self._runners[name] = _Runner(task_type, duration_ms("lease", policy.lease), timeout)
        self.grace = grace
        self.started = asyncio.Event()
        self._stopping = False
        self._outbox: list[tuple[_Runner, _Run, Outcome]] = []
        self._outbox_ready = asyncio.Event()
        self._settle_lock = asyncio.Lock()
        self._group: asyncio.TaskGroup | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._executor: Executor | None = None

    # -- control ------------------------------------------------------------------------

    def stop(self, *, now: bool = False) -> None:
        """Stop claiming, let running handlers finish within the grace period, then return.

        With ``now``, running handlers are cut short at once and their tasks handed back.
        """
        self._stopping = True
        for runner in self._runners.values():
            runner.signal.set()
            if now:
                for run in runner.active.values():
                    if run.task is not None and not run.finished:
                        run.task.cancel()

    def pause(self, task_type: str) -> None:
        """Stop claiming tasks of one type; handlers already running finish."""
        self._runner(task_type).paused = True

    def resume(self, task_type: str) -> None:
        """Claim tasks of a paused type again."""
        runner = self._runner(task_type)
        runner.paused = False
        runner.signal.set()

    def _runner(self, task_type: str) -> _Runner:
        runner = self._runners.get(task_type)
        if runner is None:
            raise UnknownTaskType(task_type, tuple(self._runners))
        return runner

    # The source design's names for the same.
    stop_scheduled_tasks = pause
    start_scheduled_tasks = resume

    @property
    def running(self) -> dict[str, int]:
        """How many handlers of each type are running now."""
        return {name: r.running for name, r in self._runners.items()}

    # -- main ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Run until :meth:`stop` is called; then finish or hand back every claimed task."""
        self._loop = asyncio.get_running_loop()
        store = await self.app.open()
        for declared in self.app.schedules.declared.values():
            if declared.task_type in self._runners:
                await self.app.schedules.upsert(declared)
        for warning in store.durability_warnings():
            log.warning("%s", warning)
        sync_slots = sum(
            r.task_type.policy.concurrency
            for r in self._runners.values()
            if not r.task_type.is_async
        )
        if sync_slots:
            self._pool = ThreadPoolExecutor(sync_slots, thread_name_prefix="duetime-handler")
        self._executor = Executor(self.app, self._pool)
        log.info(
            "worker started: types %s, namespace %s", ", ".join(self._runners), self.app.namespace
        )
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                helpers = [
                    group.create_task(store.listen(self._on_wake)),
                    group.create_task(self._renew_loop(store)),
                    group.create_task(self._flush_loop(store)),
                    group.create_task(self._upkeep_loop(store)),
                ]
                loops = [
                    group.create_task(self._claim_loop(store, r)) for r in self._runners.values()
                ]
                self.started.set()
                await asyncio.gather(*loops)
                await self._drain()
                await self._final_flush(store)
                await _cancel_until_done(helpers)
        finally:
            self._group = None
            self._loop = None
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)
            log.info("worker stopped")

    def _on_wake(self, task_type: str, due_ms: int) -> None:
        if task_type == "*":
            for runner in self._runners.values():
                runner.signal.set()
        elif (one := self._runners.get(task_type)) is not None:
            one.signal.set()

    async def _wait(self, runner: _Runner, seconds: float) -> None:
        try:
            async with asyncio.timeout(seconds):
                await runner.signal.wait()
        except TimeoutError:
            pass

    # -- claiming -----------------------------------------------------------------------

    async def _claim_loop(self, store: Store, runner: _Runner) -> None:
        task_type = runner.task_type
        policy, pacing = task_type.policy, task_type.pacing
        pause = pacing.pause.total_seconds()
        idle_ms = duration_ms("max_idle", pacing.max_idle)
        lookahead_ms = duration_ms("lookahead", pacing.lookahead, allow_zero=True)
        errors = 0
        while not self._stopping:
            runner.signal.clear()
            free = policy.concurrency - runner.running
            if runner.paused or free <= 0:
                runner.waiting_for_slot = free <= 0
                await runner.signal.wait()
                continue
            limit = min(free, pacing.batch)
            now_ms = self.app.clock.now_ms()
            try:
                batch = await store.claim(
                    task_type.name,
                    now_ms=now_ms,
                    limit=limit,
                    lease_ms=runner.lease_ms,
                    max_stalls=policy.max_stalls,
                    at_most_once=policy.delivery == "at_most_once",
                    lookahead_ms=lookahead_ms,
                )
            except Exception as exc:  # a worker outlives any failure of its store
                errors += 1
                delay = _backoff(errors)
                _log_store_failure(
                    exc, "claiming %s failed (%s); again in %.2f s", task_type.name, exc, delay
                )
                await self._wait(runner, delay)
                continue
            errors = 0
            if batch.reaped:
                log.info("%s: %d expired leases reaped", task_type.name, batch.reaped)
            for claim in batch.claims:
                self._start(runner, claim, early=claim.due_ms > now_ms)
            if len(batch.claims) == limit:
                if pause:
                    await self._wait(runner, pause)
                continue
            wait_ms: float = idle_ms
            if batch.next_ms is not None:
                # Wake early enough to claim the next task before it is due.
                wait_ms = min(idle_ms, batch.next_ms - lookahead_ms - self.app.clock.now())
            if wait_ms > 0:
                await self._wait(runner, wait_ms / 1000)

    def _start(self, runner: _Runner, claim: Claim, *, early: bool) -> None:
        run = _Run(claim, early)
        runner.active[claim.token] = run
        if self._stopping or self._loop is None:
            # Claimed after the stop began: hand it back without running it.
            self._finish(runner, run, Outcome("release", claim, claim.due_ms), started=False)
            return
        runner.running += 1
        # Not in the task group: one task per handler is the hot path, and shutdown reaches
        # every one of them through runner.active anyway.
        run.task = self._loop.create_task(self._execute(runner, run))

    # -- running ------------------------------------------------------------------------

    async def _execute(self, runner: _Runner, run: _Run) -> None:
        assert self._executor is not None
        try:
            if run.early:
                clock, due = self.app.clock, run.claim.due_ms
                # Claimed ahead of time: start it when it is due. The loop, because an event
                # loop timer may fire a fraction of a millisecond early.
                while (ahead := due - clock.now()) > 0:  # noqa: ASYNC110 - a timer, not a poll
                    await asyncio.sleep(ahead / 1000)
            outcome = await self._executor.run(runner.task_type, runner.timeout, run.claim)
        except asyncio.CancelledError:
            # Cut short by the end of the grace period: hand the task back.
            claim = run.claim
            self._finish(runner, run, Outcome("release", claim, claim.due_ms))
            raise
        self._finish(runner, run, outcome)

    def _finish(self, runner: _Runner, run: _Run, outcome: Outcome, started: bool = True) -> None:
        if started:
            runner.running -= 1
        run.finished = True
        self._outbox.append((runner, run, outcome))
        self._outbox_ready.set()
        if runner.waiting_for_slot:
            runner.waiting_for_slot = False
            runner.signal.set()

    # -- settling and leases ------------------------------------------------------------

    async def _flush_loop(self, store: Store) -> None:
        errors = 0
        while True:
            await self._outbox_ready.wait()
            self._outbox_ready.clear()
            if await self._settle(store):
                errors = 0
            else:
                errors += 1
                await asyncio.sleep(_backoff(errors))

    async def _settle(self, store: Store) -> bool:
        """Send every outcome waiting; False (and they wait on) when the store failed.

        One settle at a time: the shutdown's final flush must not see an empty outbox while
        the flush loop's call is still in flight, and then cancel that call.
        """
        async with self._settle_lock:
            return await self._settle_now(store)

    async def _settle_now(self, store: Store) -> bool:
        items, self._outbox = self._outbox, []
        by_type: dict[str, list[tuple[_Runner, _Run, Outcome]]] = {}
        for item in items:
            by_type.setdefault(item[0].task_type.name, []).append(item)
        groups = list(by_type.items())
        for n, (name, group) in enumerate(groups):
            try:
                kept = await store.settle(name, [o for _, _, o in group], self.app.clock.now_ms())
            except Exception as exc:
                _log_store_failure(
                    exc,
                    "settling %d %s outcomes failed (%s); will try again",
                    len(group),
                    name,
                    exc,
                )
                self._outbox[:0] = [item for _, later in groups[n:] for item in later]
                self._outbox_ready.set()
                return False
            for (runner, run, outcome), ok in zip(group, kept, strict=True):
                runner.active.pop(run.claim.token, None)
                if not ok and outcome.op != "release":
                    log.warning(
                        "%s/%s: lease lost before its outcome (%s) was kept; another "
                        "run supersedes it",
                        name,
                        run.claim.id,
                        outcome.op,
                    )
        return True

    async def _renew_loop(self, store: Store) -> None:
        interval = min(r.lease_ms for r in self._runners.values()) / 3000
        while True:
            await asyncio.sleep(interval)
            for runner in self._runners.values():
                held = [run.claim for run in runner.active.values()]
                if not held:
                    continue
                name = runner.task_type.name
                try:
                    lost = await store.extend(name, held, self.app.clock.now_ms() + runner.lease_ms)
                except Exception as exc:
                    _log_store_failure(
                        exc, "renewing %d %s leases failed: %s", len(held), name, exc
                    )
                    continue
                for claim in lost:
                    run = runner.active.get(claim.token)
                    # A run whose outcome is being settled may lose its lease to that settle.
                    if run is not None and not run.finished:
                        log.warning(
                            "%s/%s: lease lost while running; its outcome will not be kept",
                            name,
                            claim.id,
                        )

    async def _upkeep_loop(self, store: Store) -> None:
        """Once a minute: sample the store's clock again, and read the store's settings, so
        that one reconfigured to lose tasks since the worker started (a Redis switched to
        evicting keys) gets an error in the log."""
        clock = self.app.clock
        while True:
            await asyncio.sleep(UPKEEP_SECONDS)
            try:
                if isinstance(clock, StoreClock):
                    await clock.sync()
                problems = await store.check_settings()
            except Exception as exc:
                _log_store_failure(exc, "could not read the store's clock or settings: %s", exc)
                continue
            for problem in problems:
                log.error("%s", problem)

    async def _drain(self) -> None:
        tasks = [
            run.task
            for r in self._runners.values()
            for run in r.active.values()
            if run.task is not None and not run.finished
        ]
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

    async def _final_flush(self, store: Store) -> None:
        for tries in range(1, FINAL_SETTLE_TRIES + 1):
            if await self._settle(store):  # waits for a settle in flight, then sends the rest
                return
            await asyncio.sleep(_backoff(tries))
        log.error(
            "%d outcomes could not be settled; their leases will expire and the tasks run again",
            len(self._outbox),
        )
