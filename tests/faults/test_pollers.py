"""Pollers under faults: a worker killed (SIGKILL) in the middle of a poller's call, whose
call another worker takes over once its lease runs out; a worker frozen (SIGSTOP) in the
middle of a call past its lease, whose instructions are refused when it wakes; Redis killed
while a call runs, whose instructions are dispatched once it is back. Every instruction
runs once, and never more of them at once than the poller's concurrency."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import duetime
from duetime.features.pollers.registry import POLLER_LEASE
from tests.faults import fenced_poller
from tests.helpers import eventually, running
from tests.integration.test_poller_workers import ITEMS, most_at_once, start_poller_worker
from tests.servers import RedisCluster, RedisServer


@pytest.mark.slow
@pytest.mark.timeout(90)
@pytest.mark.parametrize("store", ["redis", "sqlite"])
def test_a_worker_killed_mid_call_hands_the_poller_over_after_its_lease(
    store: str, redis_server: RedisServer, namespace: str, tmp_path: Path
) -> None:
    url = redis_server.url if store == "redis" else f"sqlite:///{tmp_path / 'duetime.db'}"
    source, ledger, marker = tmp_path / "source.db", tmp_path / "ledger.txt", tmp_path / "hang"
    with sqlite3.connect(source) as db:
        db.execute("CREATE TABLE items (id TEXT PRIMARY KEY, taken INTEGER NOT NULL DEFAULT 0)")
        db.executemany(
            "INSERT INTO items (id) VALUES (?)", [(f"item-{n:03}",) for n in range(ITEMS)]
        )
    args = [url, namespace, str(source), str(ledger)]
    env = {"POLLER_HANG_MARKER": str(marker)}
    workers = [start_poller_worker(args, tmp_path / f"w{n}.log", env) for n in range(2)]
    try:
        deadline = time.monotonic() + 20
        while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        hung = int(marker.read_text())
        time.sleep(0.5)
        os.kill(hung, signal.SIGKILL)
        killed_at = time.monotonic()
        lease = POLLER_LEASE.total_seconds()
        while time.monotonic() < killed_at + lease + 30:
            text = ledger.read_text()
            if text.count("\nend ") >= ITEMS:
                break
            time.sleep(0.1)
        took = time.monotonic() - killed_at
    finally:
        for proc in workers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in workers:
            proc.wait(20)

    lines = [line.split() for line in ledger.read_text().splitlines()]
    runs = Counter(f[1] for f in lines if f[0] == "end")
    assert sorted(runs) == [f"item-{n:03}" for n in range(ITEMS)]
    assert max(runs.values()) == 1
    survivors = {int(f[2]) for f in lines if f[0] == "start"}
    assert hung not in survivors
    # Taken over once the dead worker's lease ran out, not before, and not much later.
    first_call = min(int(f[2]) for f in lines if f[0] == "call")
    hang_ns = next(int(f[2]) for f in lines if f[0] == "hang")
    assert (first_call - hang_ns) / 1e9 >= lease - 1
    assert took < lease + 20


Lines = list[list[str]]


def _ledger_until(path: Path, done: Callable[[Lines], bool], within: float) -> Lines:
    """The ledger's lines once ``done(lines)``, or after ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        lines = [line.split() for line in path.read_text().splitlines()] if path.exists() else []
        if done(lines) or time.monotonic() > deadline:
            return lines
        time.sleep(0.02)


def _url(store: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if store == "cluster":
        cluster: RedisCluster = request.getfixturevalue("redis_cluster")
        return cluster.cluster_url
    if store == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    if store == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        return server.url
    return f"sqlite:///{tmp_path / 'duetime.db'}"


@pytest.mark.slow
@pytest.mark.timeout(90)
@pytest.mark.parametrize("store", ["redis", "cluster", "sqlite", "postgres"])
def test_a_worker_frozen_in_a_call_past_its_lease_dispatches_nothing_when_it_wakes(
    store: str, request: pytest.FixtureRequest, namespace: str, tmp_path: Path
) -> None:
    """SIGSTOP the worker inside the scheduler for longer than the poller's lease: the
    other worker takes the call over and dispatches 5 instructions; SIGCONT: the frozen call
    returns 5 more, whose dispatch the store refuses (an error event, LeaseLost), so no more
    than 5 handlers ever run at once."""
    ledger = tmp_path / "ledger.txt"
    args = [_url(store, request, tmp_path), namespace, str(ledger)]
    module = "tests.faults.fenced_poller"
    workers = [start_poller_worker(args, tmp_path / f"w{n}.log", None, module) for n in range(2)]
    frozen = 0
    lease, handler = fenced_poller.LEASE_SECONDS, fenced_poller.HANDLER_SECONDS
    try:
        lines = _ledger_until(ledger, lambda lines: any(f[0] == "inside" for f in lines), 30)
        frozen = next(int(f[1]) for f in lines if f[0] == "inside")
        os.kill(frozen, signal.SIGSTOP)
        stopped = time.monotonic()
        # The other worker takes the call over once the lease ran out, and runs its five.
        _ledger_until(ledger, lambda lines: sum(f[0] == "start" for f in lines) >= 5, lease + 20)
        time.sleep(max(0.0, stopped + lease + 0.5 - time.monotonic()))
        os.kill(frozen, signal.SIGCONT)
        frozen_for = time.monotonic() - stopped

        def woke(lines: Lines) -> bool:  # its call returned: refused, or (unfenced) running
            mine = f"{frozen}-"
            return any(f[0] == "error" and f[1] == str(frozen) for f in lines) or any(
                f[0] == "start" and f[1].startswith(mine) for f in lines
            )

        _ledger_until(ledger, woke, 10)

        def settled(lines: Lines) -> bool:
            return sum(f[0] == "start" for f in lines) == sum(f[0] == "end" for f in lines)

        lines = _ledger_until(ledger, settled, handler + 10)
        time.sleep(0.5)  # anything dispatched late would show
    finally:
        for proc in workers:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.send_signal(signal.SIGTERM)
        codes = [proc.wait(20) for proc in workers]
    logs = "\n".join((tmp_path / f"w{n}.log").read_text()[-3000:] for n in range(2))
    assert codes == [0, 0], logs

    lines = [line.split() for line in ledger.read_text().splitlines()]
    assert frozen_for > lease
    starts = {f[1]: int(f[3]) for f in lines if f[0] == "start"}
    ends = {f[1]: int(f[3]) for f in lines if f[0] == "end"}
    assert sorted(starts) == sorted(ends)
    # Never more at once than the concurrency, and none of the frozen call's instructions.
    assert most_at_once([(starts[i], ends[i]) for i in starts]) == fenced_poller.CONCURRENCY
    assert len(starts) == fenced_poller.CONCURRENCY
    assert not [i for i in starts if i.startswith(f"{frozen}-")], logs
    # The frozen call returned its five, and their dispatch was refused.
    inside = next(int(f[2]) for f in lines if f[0] == "inside")
    calls = {(int(f[1]), int(f[2])): (int(f[3]), int(f[4])) for f in lines if f[0] == "call"}
    assert calls[frozen, inside][1] == fenced_poller.CONCURRENCY
    refused = [f[3] for f in lines if f[0] == "error" and f[1] == str(frozen)]
    assert refused == ["LeaseLost"], logs
    # Apart from the frozen one, no two calls ever overlapped.
    others = [(start, end) for (_, start), (end, _) in calls.items() if start != inside]
    assert most_at_once(others) == 1


@pytest.fixture
def aof_redis() -> Iterator[RedisServer]:
    with RedisServer("--appendonly", "yes", "--appendfsync", "always") as server:
        yield server


@pytest.mark.slow
@pytest.mark.timeout(60)
async def test_instructions_found_while_redis_is_down_are_dispatched_when_it_is_back(
    aof_redis: RedisServer, namespace: str
) -> None:
    app = duetime.App(aof_redis.url, namespace=namespace)
    called, proceed = asyncio.Event(), asyncio.Event()
    handled: list[str] = []
    errors: list[duetime.ErrorEvent] = []

    @app.poller("outage", concurrency=5, delay=lambda attempt: 0.05)
    async def find(ctx: duetime.PollContext) -> list[str]:
        if called.is_set():
            return []
        called.set()
        await proceed.wait()  # the scheduler marked its rows taken; now the store is down
        return ["a", "b", "c"]

    @find.handler
    async def work(instruction: str) -> None:
        handled.append(instruction)

    app.events.on("error", errors.append)
    try:
        async with running(app):
            await asyncio.wait_for(called.wait(), 10)
            aof_redis.kill()
            proceed.set()
            # Longer than the store's own resends (about 3 s): dispatch has to try again.
            await asyncio.sleep(4.5)
            aof_redis.start()
            await eventually(lambda: len(handled) >= 3, within=30, what="all three handled")
            await asyncio.sleep(0.3)
    finally:
        await app.close()
    assert sorted(handled) == ["a", "b", "c"]
    assert not errors


@pytest.mark.slow
@pytest.mark.timeout(60)
async def test_dispatch_is_not_tried_again_past_the_lease_while_redis_is_down(
    aof_redis: RedisServer, namespace: str
) -> None:
    """Redis goes down as the scheduler returns, for longer than the poller's lease: the
    dispatch stops trying once the lease ran out (another worker may have taken the call
    over by then), and what the call found is not dispatched when Redis is back."""
    app = duetime.App(aof_redis.url, namespace=namespace)
    called, proceed = asyncio.Event(), asyncio.Event()
    handled: list[str] = []
    errors: list[duetime.ErrorEvent] = []

    @app.poller("outage", concurrency=5, delay=lambda attempt: 0.05, lease=1)
    async def find(ctx: duetime.PollContext) -> list[str]:
        if called.is_set():
            return []
        called.set()
        await proceed.wait()
        return ["a", "b", "c"]

    @find.handler
    async def work(instruction: str) -> None:
        handled.append(instruction)

    app.events.on("error", errors.append)
    try:
        async with running(app):
            await asyncio.wait_for(called.wait(), 10)
            aof_redis.kill()
            proceed.set()
            # A try, then a renewal of the lease, each failing after the store's own
            # resends (about 3 s): the lease (1 s) is past by then.
            await eventually(lambda: bool(errors), within=15, what="the dispatch given up")
            await asyncio.sleep(1)
            aof_redis.start()
            await asyncio.sleep(3)  # anything still trying would land now
    finally:
        await app.close()
    assert handled == []
    assert [type(e.error) for e in errors] == [duetime.LeaseLost], errors
