"""One task type in a worker: its claim loop, and the runs of what it claimed.

The claim loop sleeps until the earliest due time it knows of (or a wake-up), then claims
up to its free slots in one round trip. What a claim brought runs through the executor,
which hands each outcome to the outbox: the runs due now in one asyncio task, in turn,
until one waits (:mod:`.eager`), and each run claimed ahead of its due time in a task of
its own, which waits for that time.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from duetime._outage import OutageLog
from duetime.clock import Clock
from duetime.events import Events, WorkerEvent
from duetime.stores.base import NOTE, Claim, ClaimBatch, Outcome, Store
from duetime.stores.capabilities import RUN_HISTORY, use
from duetime.stores.runs import RunLog
from duetime.tasktype import TaskType
from duetime.validate import duration_ms
from duetime.worker.eager import Starter
from duetime.worker.executor import Executor
from duetime.worker.failures import store_backoff
from duetime.worker.hot import Begin, beginner
from duetime.worker.notes import note
from duetime.worker.outbox import Outbox
from duetime.worker.run import Run, abort_taken

log = logging.getLogger(__name__)

#: The shortest wait for a gate that opens by time: the store gives its opening rounded up
#: to the millisecond, and the worker's clock may read a fraction before it.
GATE_MIN_WAIT_MS = 1.0
#: What a worker's claims ask the store to count expired leases up to before the store
#: files a task itself: more than any ``max_stalls``, so that the worker decides (a series
#: files the occurrence and goes on; a one-off task goes to the dead letters).
STORE_MAX_STALLS = 2**31 - 1


@dataclass(eq=False)
class TypeRunner:
    """The state of one task type in a worker, and its claim loop.

    It is made with the worker, and given the store's clock, the executor and the outbox
    (:meth:`attach`) when the worker starts.
    """

    task_type: TaskType
    events: Events = field(init=False)
    clock: Clock = field(init=False)
    executor: Executor = field(init=False)
    outbox: Outbox = field(init=False)
    lease_ms: int = field(init=False)
    timeout: float | None = field(init=False)
    #: Where its runs are recorded (the run history), or None.
    record: RunLog | None = field(init=False, default=None)
    active: dict[int, Run] = field(default_factory=dict)  # by token: held until settled
    running: int = 0  # handlers not yet finished
    signal: asyncio.Event = field(default_factory=asyncio.Event)
    paused: bool = False
    stopping: bool = False
    waiting_for_slot: bool = False
    last_claim_ms: int | None = None  # when a claim last brought tasks (store clock)
    #: A handler's RateLimited held the type until then (store clock ms): this worker
    #: claims nothing before, without waiting for the settle that tells the store.
    held_until_ms: int = 0
    #: Starts the runs due now, a claim's batch at a time.
    starter: Starter = field(init=False)
    #: How its runs begin (see :mod:`.hot`), and how their outcomes go to the outbox.
    _begin: Begin = field(init=False, repr=False)
    _put: Callable[[Run], None] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.starter = Starter(self.begin, self._hand_back)
        policy = self.task_type.policy
        self.lease_ms = duration_ms("lease", policy.lease)
        self.timeout = None if policy.timeout is None else policy.timeout.total_seconds()

    def attach(
        self,
        clock: Clock,
        events: Events,
        executor: Executor,
        outbox: Outbox,
        record: RunLog | None = None,
    ) -> None:
        self.clock, self.events, self.executor, self.outbox = clock, events, executor, outbox
        self.record = record
        self._begin = beginner(executor, self.task_type, self.timeout)
        self._put = outbox.lane(self.name, self.active)

    @property
    def name(self) -> str:
        return self.task_type.name

    async def wait(self, seconds: float) -> None:
        """Sleep ``seconds``, or less if woken."""
        try:
            async with asyncio.timeout(seconds):
                await self.signal.wait()
        except TimeoutError:
            pass

    def _claimed(self, claims: Sequence[Claim], now_ms: int) -> None:
        self.last_claim_ms = now_ms
        if self.events.wants("claimed"):
            for claim in claims:
                lateness = now_ms - claim.due_ms
                event = WorkerEvent(
                    "claimed", self.name, claim.id, claim.due_ms, lateness_ms=lateness
                )
                self.events.emit(event)

    async def claim_loop(self, store: Store) -> None:
        task_type, clock = self.task_type, self.clock
        policy, pacing = task_type.policy, task_type.pacing
        pause = pacing.pause.total_seconds()
        idle_ms = duration_ms("max_idle", pacing.max_idle)
        lookahead_ms = duration_ms("lookahead", pacing.lookahead, allow_zero=True)
        errors = 0
        outage = OutageLog(f"claims of {task_type.name}", log)
        while not self.stopping:
            self.signal.clear()
            free = policy.concurrency - self.running
            if self.paused or free <= 0:
                self.waiting_for_slot = free <= 0
                await self.signal.wait()
                continue
            if self.held_until_ms and (held := self.held_until_ms - clock.now()) > 0:
                await self.wait(held / 1000)
                continue
            limit = min(free, pacing.batch)
            try:
                batch = await self._claim(store, limit, lookahead_ms)
            except Exception as exc:  # a worker outlives any failure of its store
                errors += 1
                outage.failed(exc, "claiming failed (%s); trying again", exc)
                await self.wait(store_backoff(errors))
                continue
            errors = 0
            outage.ok()
            if len(batch.claims) == limit:
                if pause:
                    await self.wait(pause)
                continue
            wait_ms: float = idle_ms
            if batch.next_ms is not None:
                # Wake early enough to claim the next task before it is due.
                wait_ms = min(idle_ms, batch.next_ms - lookahead_ms - clock.now())
            if batch.open_ms is not None:
                # A gate holds due tasks back until then: no look-ahead (the gate counts
                # starts from the claim), and never a spin on a time just reached.
                wait_ms = min(wait_ms, max(batch.open_ms - clock.now(), GATE_MIN_WAIT_MS))
            if wait_ms > 0:
                await self.wait(wait_ms / 1000)

    async def claim_now(self, store: Store, most: int) -> int:
        """Claim what is due now, up to the free slots and ``most``, and start running it:
        a burst's claim (no look-ahead, no wait). Returns how many were claimed.

        Raises:
            StoreError: the claim failed (nothing was claimed).
        """
        limit = min(self.task_type.policy.concurrency - self.running, self.task_type.pacing.batch)
        limit = min(limit, most)
        if self.paused or self.stopping or limit <= 0:
            return 0
        return len((await self._claim(store, limit, 0)).claims)

    async def _claim(self, store: Store, limit: int, lookahead_ms: int) -> ClaimBatch:
        """One claim of up to ``limit`` tasks due by now and ``lookahead_ms``; each claimed
        task starts running (at its due time)."""
        task_type, policy = self.task_type, self.task_type.policy
        now_ms = self.clock.now_ms()
        claiming = store.claim
        if self.record is not None:  # the runs of the expired leases it reaps are recorded
            claiming = functools.partial(use(store, RUN_HISTORY).claim, record=self.record)
        batch = await claiming(
            task_type.name,
            now_ms=now_ms,
            limit=limit,
            lease_ms=self.lease_ms,
            # The store only counts expired leases: the worker that claims a task past its
            # max_stalls files it, so that a series goes on (ClaimJob.call, errors.Stalled).
            max_stalls=STORE_MAX_STALLS,
            at_most_once=policy.delivery == "at_most_once",
            lookahead_ms=lookahead_ms,
            gate=task_type.gate,
        )
        if batch.reaped:
            log.info("%s: %d expired leases reaped", task_type.name, batch.reaped)
        if batch.claims:
            self._claimed(batch.claims, now_ms)
            self.start(batch.claims, now_ms)
        return batch

    def start(self, claims: Sequence[Claim], now_ms: int) -> None:
        """Start running what a claim brought: the runs due by ``now_ms`` together, each
        one claimed ahead of its due time in a task of its own."""
        active = self.active
        if self.stopping:
            for claim in claims:
                # Claimed after the stop began: hand it back without running it.
                run = active[claim.token] = Run(claim)
                self.finish(run, Outcome("release", claim, claim.due_ms), started=False)
            return
        loop = asyncio.get_running_loop()
        due_now = []
        self.running += len(claims)
        for claim in claims:  # by index: (id, token, stalls, due, record, lead)
            run = active[claim[1]] = Run(claim)
            if claim[3] > now_ms:
                # Not in the task group: shutdown reaches every run through self.active.
                run.task = loop.create_task(self._execute(run))
            else:
                due_now.append(run)
        if due_now:
            self.starter.start(loop, due_now)

    def _hand_back(self, run: Run) -> None:
        if not run.finished:
            claim = run.claim
            self.finish(run, Outcome("release", claim, claim.due_ms))

    def begin(self, run: Run) -> Coroutine[Any, Any, None] | None:
        """Begin a run due now, in the caller's task: None once it finished (its outcome in
        the outbox), else what goes on with it (a coroutine, not started)."""
        try:
            result = self._begin(run)
        except Exception as exc:  # the executor's own guard failed: still free the slot
            self.finish(run, self._internal(run, exc))
            return None
        if isinstance(result, Outcome):
            self.finish(run, result)
            return None
        return self._complete(run, result)

    async def _execute(self, run: Run) -> None:
        """A run claimed ahead of its due time, in a task of its own."""
        await self._complete(run, self._when_due(run))

    async def _when_due(self, run: Run) -> Outcome:
        claim, clock = run.claim, self.clock
        due = claim.due_ms - claim.lead_us / 1000  # to the microsecond, where the store says
        # Start it when it is due. The loop, because an event loop timer may fire a
        # fraction of a millisecond early.
        while (ahead := due - clock.now()) > 0:  # noqa: ASYNC110 - a timer, not a poll
            await asyncio.sleep(ahead / 1000)
        return await self.executor.run(self.task_type, self.timeout, run)

    async def _complete(self, run: Run, call: Awaitable[Outcome]) -> None:
        """Await the rest of a run, then hand its outcome on."""
        try:
            outcome = await call
        except asyncio.CancelledError:
            if run.aborted is None:
                # Cut short by the end of the grace period: hand the task back.
                claim = run.claim
                self.finish(run, Outcome("release", claim, claim.due_ms))
                raise
            # Aborted outside its handler's call (waiting for its due time, or in its
            # trigger's bookkeeping): run it again, and its handler call ends at once as
            # aborted, so that its trigger says what follows.
            abort_taken(run)
            await self._complete(run, self.executor.run(self.task_type, self.timeout, run))
            return
        except Exception as exc:  # the executor's own guard failed: still free the slot
            outcome = self._internal(run, exc)
        self.finish(run, outcome)

    def _internal(self, run: Run, exc: Exception) -> Outcome:
        log.exception("%s: a run failed outside its handler", self.name)
        claim = run.claim
        return Outcome("dead", claim, None, claim.record, f"internal error: {exc!r}")

    def finish(self, run: Run, outcome: Outcome, started: bool = True) -> None:
        if started:
            self.running -= 1
        # By index (a named tuple's fields cost a call, on every run): op, due.
        if outcome[0] == "hold" and outcome[2] is not None:
            self.held_until_ms = max(self.held_until_ms, outcome[2])
        run.finished = True
        if self.record is not None and outcome[NOTE] is None:  # the history's note rides along
            outcome = note(run, outcome, self.clock.now_ms())
        run.outcome = outcome
        self._put(run)
        if self.waiting_for_slot:
            self.waiting_for_slot = False
            self.signal.set()

    def stop(self, *, now: bool) -> None:
        """Stop claiming; with ``now``, cut short what runs (its tasks are handed back)."""
        self.stopping = True
        self.signal.set()
        if now:
            for task in self.unfinished():
                task.cancel()

    def unfinished(self) -> set[asyncio.Task[None]]:
        """The tasks of the runs still going (and of the batches still starting runs)."""
        tasks = {r.task for r in self.active.values() if r.task is not None and not r.finished}
        return tasks | self.starter.tasks
