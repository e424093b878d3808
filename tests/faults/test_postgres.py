"""Faults on the PostgreSQL store, with 10,000 tasks each: a worker SIGKILLed mid-handler,
its connections and its LISTEN connection ended by ``pg_terminate_backend``, the server
restarted mid-run (a private cluster of the test's own: the shared server is never
restarted), and three workers sharing the work. Every task runs; a task runs twice only
when a fault caught it in flight, so the repeats are bounded by what was in flight.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
import pytest

import duetime
from tests.faults.harness import WorkerProcess, Workers, by_task, counts
from tests.helpers import eventually
from tests.postgres import PrivateCluster, fresh_schema, private_cluster_problem
from tests.servers import free_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

N = 10_000
CONCURRENCY = 32
BATCH = 1000


@pytest.fixture
def url(namespace: str) -> Iterator[str]:
    """A fresh schema; its connections are named after the namespace, so that the test can
    find the worker's in pg_stat_activity."""
    with fresh_schema() as schema_url:
        yield f"{schema_url}&application_name=w_{namespace}"


@pytest.fixture
async def app(url: str, namespace: str) -> AsyncIterator[duetime.App]:
    producer = duetime.App(url.replace("application_name=w_", "application_name=p_"),
                           namespace=namespace)  # fmt: skip
    producer.declare("work")
    yield producer
    await producer.close()


async def _schedule_all(app: duetime.App, prefix: str = "k", n: int = N) -> None:
    for first in range(0, n, BATCH):
        tasks = (duetime.Task("work", f"{prefix}{i}") for i in range(first, first + BATCH))
        await app.schedule_many(tasks)


async def _all_ran(workers: Workers, n: int = N, within: float = 120) -> dict[str, int]:
    await eventually(
        lambda: len(counts(workers.ledger(), "effect")) >= n, within, f"all {n} tasks ran"
    )
    return dict(counts(workers.ledger(), "effect"))


async def _empty(app: duetime.App) -> None:
    async def settled() -> bool:
        return (await app.counts("work")) == {"due": 0, "running": 0, "dead": 0}

    await eventually(settled, 20, "nothing left due, running or dead")


def _check(effects: dict[str, int], most_repeats: int, prefix: str = "k", n: int = N) -> int:
    """Every task ran; returns how many ran more than once, checked against the bound."""
    assert set(effects) == {f"{prefix}{i}" for i in range(n)}
    repeated = sum(1 for runs in effects.values() if runs > 1)
    assert repeated <= most_repeats, (repeated, most_repeats)
    assert max(effects.values()) <= 2
    return repeated


def _backends(admin: psycopg.Connection[Any], name: str) -> list[tuple[int, str]]:
    rows = admin.execute(
        "SELECT pid, query FROM pg_stat_activity WHERE application_name = %s", (name,)
    ).fetchall()
    return [(int(pid), str(query)) for pid, query in rows]


def _terminate(admin: psycopg.Connection[Any], name: str, *, listen: bool) -> int:
    """End the backends of connections named ``name``: the LISTEN one, or the others."""
    ended = 0
    for pid, query in _backends(admin, name):
        if query.startswith("LISTEN") == listen:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            ended += 1
    return ended


def _in_flight(workers: Workers) -> bool:
    """Whether a handler has started and not yet had its effect."""
    entries = workers.ledger()
    started, done = counts(entries, "start"), counts(entries, "effect")
    return any(n > done[task_id] for task_id, n in started.items())


def _cut_short(workers: Workers, pid: int) -> set[str]:
    """The tasks whose handler the worker ``pid`` started and did not finish."""
    entries = [e for e in workers.ledger() if e.pid == pid]
    started, done = counts(entries, "start"), counts(entries, "effect")
    return {task_id for task_id, n in started.items() if n > done[task_id]}


async def test_sigkill_mid_handler_loses_nothing(
    url: str, namespace: str, app: duetime.App, workers: Workers
) -> None:
    def busy() -> WorkerProcess:
        # Handlers of 20 ms: a kill falls mid-handler far more often than between batches.
        return workers.start(url, namespace, mode="sleep:0.02", lease=1.0,
                             concurrency=CONCURRENCY).wait_ready()  # fmt: skip

    worker = busy()
    await _schedule_all(app)
    await eventually(lambda: len(counts(workers.ledger(), "effect")) >= N // 5, 60, "a fifth ran")
    # Killed while handlers run (started, no effect yet), not in a gap between batches,
    # which a busy machine makes long: the ledger read after the kill says whether it was;
    # if not, another worker is started and killed the same way.
    kills, cut = 0, set[str]()
    while not cut and kills < 5:
        await eventually(lambda: _in_flight(workers), 30, "a handler running", every=0.001)
        worker.kill()
        kills += 1
        cut = _cut_short(workers, worker.pid)
        if not cut:
            worker = busy()
    assert cut, "five kills all fell between batches"
    second = workers.start(url, namespace, mode="ledger", lease=1.0).wait_ready()
    effects = await _all_ran(workers)
    await _empty(app)
    # A task runs twice only if a kill caught it between its effect and its settle: at
    # most the killed workers' running tasks.
    _check(effects, CONCURRENCY * kills)
    starts = by_task(workers.ledger(), "start")
    for task_id in cut:  # each handler cut short ran again, under a later lease
        runs = starts[task_id]
        assert len(runs) > 1 and runs[-1].token > runs[0].token, runs
    assert all(starts[task_id][-1].pid == second.pid for task_id in cut)


async def test_terminated_connections_and_listen_connection_lose_nothing(
    url: str, namespace: str, app: duetime.App, workers: Workers
) -> None:
    name = f"w_{namespace}"
    # max_idle an hour: a task run within the test's deadline was woken, not found by a
    # look-around.
    worker = workers.start(url, namespace, mode="sleep:0.002", lease=5.0, max_idle=3600,
                           concurrency=CONCURRENCY).wait_ready()  # fmt: skip
    producer = asyncio.create_task(_schedule_all(app))
    with psycopg.connect(fresh_admin_url(url), autocommit=True) as admin:
        rounds = 0
        for _ in range(4):  # mid-run: the worker's pool, while it claims and settles
            await eventually(lambda: len(_backends(admin, name)) > 1, 10, "worker connected")
            await asyncio.sleep(0.3)
            rounds += 1 if await asyncio.to_thread(_terminate, admin, name, listen=False) else 0
        assert rounds >= 3, "the worker's connections were ended mid-run"
        assert await asyncio.to_thread(_terminate, admin, name, listen=True) == 1
        await producer
        effects = await _all_ran(workers)
        await _empty(app)
        # Each ended connection may lose one settle's reply: a batch of the worker's
        # running tasks (its concurrency) may then run again once their lease is out.
        _check(effects, rounds * CONCURRENCY)

        # The LISTEN connection came back by itself: tasks scheduled into an idle worker
        # woken, not at its next look-around (max_idle, an hour here).
        def listening() -> bool:
            return any(q.startswith("LISTEN") for _, q in _backends(admin, name))

        await eventually(listening, 10, "the worker listens again")
        for late in ("late0", "late1", "late2"):
            await asyncio.sleep(0.5)
            await app.schedule("work", late)
            await eventually(partial(_ran, workers, late), 25, late)  # woken: no look-around
    assert worker.alive(), worker.log()


def _ran(workers: Workers, task_id: str) -> bool:
    return task_id in counts(workers.ledger(), "effect")


def fresh_admin_url(url: str) -> str:
    return url.split("?", 1)[0]


async def test_three_workers_run_each_task_once(
    url: str, namespace: str, app: duetime.App, workers: Workers
) -> None:
    started = [workers.start(url, namespace, mode="ledger", lease=30.0) for _ in range(3)]
    for worker in started:
        worker.wait_ready()
    await _schedule_all(app)
    effects = await _all_ran(workers)
    await _empty(app)
    _check(effects, 0)
    ran_by = {e.pid for e in workers.ledger()}
    assert len(ran_by) == 3, "every worker took a share"
    assert all(w.alive() for w in started)


@pytest.fixture
def private_cluster() -> Iterator[PrivateCluster]:
    problem = private_cluster_problem()
    if problem:
        pytest.fail(f"no private PostgreSQL cluster to restart ({problem}); the shared server "
                    "is never restarted by the tests. Install PostgreSQL's server binaries "
                    "(Debian: apt-get install -y postgresql)")  # fmt: skip
    cluster = PrivateCluster(Path(tempfile.mkdtemp(prefix="duetime-pg-")), free_port())
    try:
        yield cluster.create()
    finally:
        cluster.cleanup()


@pytest.mark.parametrize("mode", ["fast", "immediate"])
async def test_a_server_restart_mid_run_loses_nothing(
    private_cluster: PrivateCluster, namespace: str, workers: Workers, mode: str
) -> None:
    url = f"{private_cluster.url}?schema=duetime"
    app = duetime.App(url, namespace=namespace)
    app.declare("work")
    try:
        worker = workers.start(url, namespace, mode="sleep:0.002", lease=30.0, max_idle=3600,
                               concurrency=CONCURRENCY).wait_ready()  # fmt: skip
        await _schedule_all(app)
        await eventually(lambda: len(counts(workers.ledger(), "effect")) >= N // 5, 60, "a fifth")
        await asyncio.to_thread(private_cluster.stop, mode)
        await asyncio.sleep(1.0)  # down for a while: the worker's calls fail and back off
        await asyncio.to_thread(private_cluster.start)
        effects = await _all_ran(workers)
        await _empty(app)
        # The lease outlasts the outage, so a repeat means an outcome lost with the server
        # (its settle's reply never came): at most the tasks running as it went down.
        _check(effects, CONCURRENCY)
        # Scheduled after the restart: woken (wake-ups work again), not found by the
        # worker's next look-around (max_idle, an hour).
        await app.schedule("work", "after")
        await eventually(lambda: "after" in counts(workers.ledger(), "effect"), 25, "after ran")
        assert worker.alive(), worker.log()
    finally:
        await app.close()
