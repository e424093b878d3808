"""Pollers under faults: a worker killed (SIGKILL) in the middle of a poller's call, whose
call another worker takes over once its lease runs out; Redis killed while a call runs,
whose instructions are dispatched once it is back. Every instruction runs once."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import duetime
from duetime.features.pollers.registry import POLLER_LEASE
from tests.helpers import eventually, running
from tests.integration.test_poller_workers import ITEMS, start_poller_worker
from tests.servers import RedisServer


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
