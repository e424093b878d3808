"""Failover: kill -9 the primary that holds the task type's slot mid-run, under Sentinel
with durability="replicated" and on Redis Cluster, and move the slot to another primary
mid-run on the cluster. 10,000 tasks are scheduled and acknowledged while two worker
processes run them; every acknowledged task must run at least once, and a task may run
twice only because the kill caught it in flight (an outcome that did not survive, a lease
that ran out during the failover) or because the producer sent it again after a failed
call.

Each test prints one line (run pytest with ``-s`` or ``-rP`` to see it): acknowledged, lost
(acknowledged and never run), run twice, the failover's time and how many schedule calls
failed with StoreUnavailable.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pytest

import duetime
from duetime.stores.base import Durability
from tests.faults.harness import Entry, WorkerProcess, Workers, by_task, counts, wall_ms
from tests.helpers import eventually
from tests.servers import RedisCluster, SentinelGroup

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

TASKS = 10_000
#: Schedule calls the producer keeps in flight.
CALLS_IN_FLIGHT = 20
#: Task i is due (i % SPREAD) / 10 s after it is scheduled: due now and over 2 s.
SPREAD = 20
WORKERS = 2
CONCURRENCY = 50
#: Longer than a failover, so that a lease that runs out is the exception.
LEASE = 5.0
#: The fault comes once this many tasks are acknowledged.
FAULT_AT = 3_000
#: How long one task id is sent again after failed calls before the test gives up.
RESEND_FOR = 30.0
#: How long, once every task is scheduled, the workers get to run them all...
ALL_RAN_WITHIN = 90.0
#: ... unless none ran for this long (several leases: they are stuck).
STUCK_AFTER = 20.0
#: The most tasks the workers hold at once: the bound on the runs a fault can repeat.
IN_FLIGHT = WORKERS * CONCURRENCY

#: min-replicas-to-write 1: a primary cut off from its replicas stops taking writes, so
#: that what it took alone cannot be lost when a replica replaces it (cluster nodes have
#: AOF on already).
SAFE_WRITES = {"server_args": ("--min-replicas-to-write", "1", "--min-replicas-max-lag", "10")}
SAFE_WRITES_AOF = {"server_args": (*SAFE_WRITES["server_args"], "--appendonly", "yes")}
#: With durability "local", the acknowledged tasks a cluster failover may lose: those the
#: primary acknowledged in its last moments, which its replica had not received yet; no
#: more than the producer's calls in flight, one round of them.
LOCAL_LOSS_BOUND = CALLS_IN_FLIGHT


class Producer:
    """Schedules w0..w{total-1}, ``CALLS_IN_FLIGHT`` calls at a time, each id again after
    a failed call until it is acknowledged (the API's answer to an unknown outcome). An id
    still not acknowledged after ``RESEND_FOR`` s stops the producer: the store did not
    come back."""

    def __init__(self, app: duetime.App, total: int = TASKS) -> None:
        self.app = app
        self.total = total
        self.acked: dict[str, float] = {}  # id -> wall ms when schedule() returned
        self.unavailable = 0  # calls that raised StoreUnavailable
        self.resent: set[str] = set()  # ids whose schedule() failed at least once
        self.other_errors: Counter[str] = Counter()  # any other exception, by message
        self.gave_up: list[str] = []  # ids never acknowledged

    async def schedule(self, task_id: str, delay: float) -> None:
        deadline = time.monotonic() + RESEND_FOR
        while not self.gave_up:
            try:
                await self.app.schedule("work", task_id, delay=delay)
            except duetime.StoreUnavailable:
                self.unavailable += 1
            except Exception as exc:  # counted and reported: only StoreUnavailable is due
                self.other_errors[f"{type(exc).__name__}: {str(exc)[:100]}"] += 1
            else:
                self.acked[task_id] = wall_ms()
                return
            self.resent.add(task_id)
            if time.monotonic() > deadline:
                self.gave_up.append(task_id)
            await asyncio.sleep(0.05)

    async def run(self) -> None:
        numbers = iter(range(self.total))

        async def lane() -> None:
            for i in numbers:  # shared: each number goes to one lane
                if self.gave_up:
                    return
                await self.schedule(f"w{i}", (i % SPREAD) / 10)

        await asyncio.gather(*(lane() for _ in range(CALLS_IN_FLIGHT)))


#: A fault: done mid-run, it returns what it measured (seconds) for the report.
Fault = Callable[[], Awaitable[dict[str, float]]]


@dataclass
class Run:
    """What one run under a fault came to."""

    acked: int
    gave_up: list[str]  # never acknowledged, however often sent
    lost: list[str]  # acknowledged, no effect in the ledger
    lost_states: Counter[str]  # where the lost ones are: "due", "running", "dead", "gone"
    twice: set[str]  # ids with more than one effect
    resent: set[str]
    running_at_fault: int  # started before the fault, no effect before it
    unavailable: int
    other_errors: Counter[str]
    measured: dict[str, float]
    left: dict[str, int]  # app.counts at the end
    seconds: float
    workers_alive: bool
    worker_log_lines: Counter[str]  # the workers' WARNING and ERROR lines
    worker_errors: list[str]  # their ERROR lines

    def report(self, what: str) -> str:
        times = ", ".join(f"{name} {value:.1f} s" for name, value in self.measured.items())
        lost_where = f" ({dict(self.lost_states)})" if self.lost else ""
        gave_up = f"NEVER ACKNOWLEDGED {self.gave_up[:3]}, " if self.gave_up else ""
        return (
            f"{what}: {gave_up}acknowledged {self.acked}, lost {len(self.lost)}{lost_where}, "
            f"run twice {len(self.twice)} ({len(self.twice & self.resent)} of them resent), "
            f"running at the fault {self.running_at_fault}, {times}, "
            f"StoreUnavailable {self.unavailable} ({len(self.resent)} ids), "
            f"other errors {dict(self.other_errors)}, left {self.left}, "
            f"worker log {dict(self.worker_log_lines)}, run {self.seconds:.1f} s"
        )


def running_at(ledger: list[Entry], t_ms: float) -> int:
    """Tasks that had started by ``t_ms`` and had no effect yet."""
    started = {e.task_id for e in ledger if e.kind == "start" and e.t_ms <= t_ms}
    done = {e.task_id for e in ledger if e.kind == "effect" and e.t_ms <= t_ms}
    return len(started - done)


def longest_gap(acked: dict[str, float], since_ms: float) -> float:
    """The longest wait, in seconds, between acknowledgements from ``since_ms`` on: how long
    the producer could not schedule."""
    times = [since_ms, *sorted(t for t in acked.values() if t > since_ms)]
    return max(b - a for a, b in zip(times, times[1:], strict=False)) / 1000 if times[1:] else 0


async def wait_all_ran(app: duetime.App, workers: Workers, acked: set[str]) -> list[Entry]:
    """The ledger once every acknowledged id has an effect or the store holds no task due
    or running (what has not run by then never will); or after ALL_RAN_WITHIN s, or once
    no new effect came for STUCK_AFTER s."""
    start = progress = time.monotonic()
    seen = -1
    while True:
        drained = await nothing_due_or_running(app)
        ledger = workers.ledger()  # after the store's answer: effects come before settles
        effects = set(by_task(ledger, "effect"))
        now = time.monotonic()
        if len(effects) != seen:
            seen, progress = len(effects), now
        if acked <= effects or drained:
            return ledger
        if now - start > ALL_RAN_WITHIN or now - progress > STUCK_AFTER:
            return ledger
        await asyncio.sleep(0.5)


async def nothing_due_or_running(app: duetime.App) -> bool:
    try:
        left = await app.counts("work")
    except duetime.StoreError:
        return False
    return left["due"] == 0 and left["running"] == 0


async def where(app: duetime.App, task_ids: list[str]) -> Counter[str]:
    states: Counter[str] = Counter()
    for task_id in task_ids:
        try:
            info = await app.get("work", task_id)
        except duetime.StoreError as exc:
            states[type(exc).__name__] += 1
            continue
        states["gone" if info is None else info.state] += 1
    return states


async def left_over(app: duetime.App) -> dict[str, int]:
    """app.counts once nothing is left, or as it is after 15 s."""
    nothing = {"due": 0, "running": 0, "dead": 0}
    deadline = time.monotonic() + 15
    while True:
        try:
            left = {str(state): n for state, n in (await app.counts("work")).items()}
        except duetime.StoreError as exc:
            left = {type(exc).__name__: 1}
        if left == nothing or time.monotonic() > deadline:
            return left
        await asyncio.sleep(0.2)


#: The start of a worker_app log record: relative ms, pid, logger, level.
RECORD = re.compile(r"^ *\d+ \d+ \S+ [A-Z]+ ")


def log_lines(started: list[WorkerProcess]) -> tuple[Counter[str], list[str]]:
    """How many WARNING and ERROR records the workers logged, and the ERROR ones, each
    with the last line of its traceback if it has one."""
    found: Counter[str] = Counter()
    errors: list[str] = []
    for worker in started:
        lines = worker.log().splitlines()
        for n, line in enumerate(lines):
            match = RECORD.match(line)
            if match is None:
                continue
            level = match.group().split()[-1]
            found[level] += 1
            if level == "ERROR":
                after = [x for x in lines[n + 1 : n + 80] if x.strip()]
                end = next((k for k, x in enumerate(after) if RECORD.match(x)), len(after))
                errors.append(f"{line} | {after[end - 1].strip()}" if end else line)
    return Counter({k: v for k, v in found.items() if k in ("WARNING", "ERROR")}), errors


async def run_with_fault(
    app: duetime.App,
    workers: Workers,
    started: list[WorkerProcess],
    fault: Fault,
) -> Run:
    """Schedule TASKS tasks with ``app`` while ``started`` run them, do ``fault`` once
    FAULT_AT are acknowledged, and wait until every acknowledged one ran."""
    began = time.monotonic()
    producer = Producer(app)
    production = asyncio.create_task(producer.run())
    try:
        await eventually(lambda: len(producer.acked) >= FAULT_AT, 60, f"{FAULT_AT} acknowledged")
        assert len(producer.acked) < TASKS, "the producer was done before the fault"
        fault_ms = wall_ms()
        measured = await fault()
        await production
    finally:
        production.cancel()
    measured["longest write gap"] = longest_gap(producer.acked, fault_ms)
    ledger = await wait_all_ran(app, workers, set(producer.acked))
    lines, errors = log_lines(started)
    effects = counts(ledger, "effect")
    lost = sorted(set(producer.acked) - set(effects))
    return Run(
        acked=len(producer.acked),
        gave_up=producer.gave_up,
        lost=lost,
        lost_states=await where(app, lost[:2000]),
        twice={t for t, n in effects.items() if n > 1},
        resent=producer.resent,
        running_at_fault=running_at(ledger, fault_ms),
        unavailable=producer.unavailable,
        other_errors=producer.other_errors,
        measured=measured,
        left=await left_over(app),
        seconds=time.monotonic() - began,
        workers_alive=all(w.alive() for w in started),
        worker_log_lines=lines,
        worker_errors=errors,
    )


def start_workers(
    workers: Workers, url: str, namespace: str, durability: str = "local"
) -> list[WorkerProcess]:
    """Start the worker processes and wait until each runs."""
    started = [
        workers.start(
            url,
            namespace,
            mode="sleep:0.01",
            lease=LEASE,
            concurrency=CONCURRENCY,
            durability=durability,
        )
        for _ in range(WORKERS)
    ]
    for worker in started:
        worker.wait_ready()
    return started


def show(run: Run, what: str) -> None:
    """Print the run's figures, for the record, and the workers' ERROR lines if any."""
    for line in [run.report(what), *(f"  {e}" for e in run.worker_errors[:5])]:
        print(line, flush=True)  # noqa: T201


def assert_no_task_lost(run: Run, workers: Workers) -> None:
    assert not run.gave_up, f"the store did not come back: {dict(run.other_errors)}"
    assert run.workers_alive, workers.logs()
    assert not run.lost, f"{len(run.lost)} acknowledged tasks never ran: {run.lost[:20]}"
    assert run.left == {"due": 0, "running": 0, "dead": 0}, run.left


# -- Sentinel -------------------------------------------------------------------------------


@pytest.mark.parametrize("fresh_sentinel_group", [SAFE_WRITES_AOF], indirect=True)
async def test_sentinel_failover_with_replicated_durability_loses_no_acknowledged_task(
    fresh_sentinel_group: SentinelGroup, namespace: str, workers: Workers
) -> None:
    group = fresh_sentinel_group
    url = group.sentinel_url
    app = duetime.App(url, namespace=namespace, durability="replicated")
    app.declare("work")

    async def kill_the_primary() -> dict[str, float]:
        start = time.monotonic()
        old = group.kill_primary()
        await asyncio.to_thread(group.wait_failover, old, 30)
        took = time.monotonic() - start
        # The old primary comes back (with its AOF) and is made a replica of the new one.
        await asyncio.to_thread(group.start, old)
        await asyncio.to_thread(group.wait_replicas, 2, 30)
        return {"failover": took, "old primary a replica again after": time.monotonic() - start}

    try:
        # Workers write with replicated durability too: a claim or an outcome they were
        # told was done survives the failover.
        started = start_workers(workers, url, namespace, durability="replicated")
        run = await run_with_fault(app, workers, started, kill_the_primary)
        show(run, "sentinel failover, durability=replicated")
        assert_no_task_lost(run, workers)
        assert not run.other_errors, run.other_errors
        # A run repeats only what the kill caught in flight, or what the producer resent.
        # One earlier run repeated 1,003 (none lost); the likely cause, a new connection
        # sent by the failover's leader sentinel to the restarted old primary, is fixed
        # (sentinel.py skips a sentinel whose record says a failover is in progress), and
        # 19 runs since repeated 0 or 1 (docs: the note).
        assert len(run.twice - run.resent) <= IN_FLIGHT, sorted(run.twice)[:20]
    finally:
        await app.close()


# -- Redis Cluster --------------------------------------------------------------------------


def type_slot(cluster: RedisCluster, namespace: str) -> int:
    """The slot of every key of the task type "work" in ``namespace``."""
    return cluster.key_slot("{" + namespace + ":work}")


async def cluster_failover(
    cluster: RedisCluster, namespace: str, workers: Workers, durability: Durability
) -> Run:
    """Kill -9 the primary of the type's slot mid-run, wait for its replica to take over,
    then start the old one again (it rejoins as the new one's replica)."""
    url = cluster.cluster_url
    app = duetime.App(url, namespace=namespace, durability=durability)
    app.declare("work")
    victim = cluster.primary_for_slot(type_slot(cluster, namespace))
    (heir,) = cluster.replicas_of(victim.id)

    async def kill_the_primary() -> dict[str, float]:
        start = time.monotonic()
        cluster.kill(victim.port)
        await asyncio.to_thread(cluster.wait_ok, 30)
        took = time.monotonic() - start
        assert cluster.primary_for_slot(type_slot(cluster, namespace)).id == heir.id
        await asyncio.to_thread(cluster.start, victim.port)
        await asyncio.to_thread(cluster.wait_ok, 30)
        return {"failover": took, "old primary a replica again after": time.monotonic() - start}

    try:
        started = start_workers(workers, url, namespace, durability)
        run = await run_with_fault(app, workers, started, kill_the_primary)
        show(run, f"cluster failover, durability={durability}")
        return run
    finally:
        await app.close()


async def test_cluster_failover_of_the_types_primary_with_local_durability(
    fresh_redis_cluster: RedisCluster, namespace: str, workers: Workers
) -> None:
    """Replication is asynchronous: a write the primary acknowledged just before the kill
    may not have reached its replica, and then it is lost. Measured, and bounded: in 14
    runs on one host, 12 lost none and 2 lost 7 and 8 tasks (gone from the store), never
    more than one round of the producer's calls in flight."""
    run = await cluster_failover(fresh_redis_cluster, namespace, workers, "local")
    assert not run.gave_up, f"the store did not come back: {dict(run.other_errors)}"
    assert run.workers_alive, workers.logs()
    assert len(run.lost) <= LOCAL_LOSS_BOUND, run.lost[:20]
    assert not run.other_errors, run.other_errors
    assert len(run.twice - run.resent) <= IN_FLIGHT, sorted(run.twice)[:20]


@pytest.mark.parametrize("fresh_redis_cluster", [SAFE_WRITES], indirect=True)
async def test_cluster_failover_of_the_types_primary_with_replicated_durability(
    fresh_redis_cluster: RedisCluster, namespace: str, workers: Workers
) -> None:
    run = await cluster_failover(fresh_redis_cluster, namespace, workers, "replicated")
    assert_no_task_lost(run, workers)
    assert not run.other_errors, run.other_errors
    assert len(run.twice - run.resent) <= IN_FLIGHT, sorted(run.twice)[:20]


async def test_cluster_reshard_of_the_types_slot_mid_run_loses_and_repeats_nothing(
    fresh_redis_cluster: RedisCluster, namespace: str, workers: Workers
) -> None:
    cluster = fresh_redis_cluster
    url = cluster.cluster_url
    app = duetime.App(url, namespace=namespace)
    app.declare("work")
    slot = type_slot(cluster, namespace)
    source = cluster.primary_for_slot(slot)
    target = next(p for p in cluster.primaries() if p.id != source.id)

    async def move_the_slot() -> dict[str, float]:
        start = time.monotonic()
        await asyncio.to_thread(cluster.reshard, slot, target.id, 30)
        assert cluster.primary_for_slot(slot).id == target.id
        return {"reshard": time.monotonic() - start}

    try:
        started = start_workers(workers, url, namespace)
        run = await run_with_fault(app, workers, started, move_the_slot)
        show(run, "cluster reshard")
        assert_no_task_lost(run, workers)
        assert not run.other_errors, run.other_errors
        # No server died: every outcome reached Redis, so nothing runs twice (bar an id
        # the producer sent again after a failed call, which may have been done already).
        assert run.twice <= run.resent, sorted(run.twice - run.resent)[:20]
    finally:
        await app.close()
