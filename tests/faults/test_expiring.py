"""Expiring entries and key expiry events with real worker processes: entries that expired
while every worker was down, pub/sub connections killed mid-run, three workers listening."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter

import pytest
import redis
import redis.asyncio as aredis

import duetime
from tests.faults.harness import Workers, counts
from tests.helpers import eventually

ENTRIES = 10_000
DB = 2  # where the key expiry tests' keys live


def _values(workers: Workers) -> dict[str, list[object]]:
    """Each key's handled values, from the ledger's ``value`` lines."""
    out: dict[str, list[object]] = {}
    for entry in workers.ledger():
        if entry.kind == "value":
            out.setdefault(entry.task_id, []).append(json.loads(entry.occurrence))
    return out


#: The entries' TTL: long enough that both puts of 10,000 entries land before the first
#: expires, on a machine busy with other tests too.
TTL_SECONDS = 5.0


async def _put_expired(redis_url: str, namespace: str) -> None:
    """10,000 entries, each put twice (the second value is the one that counts), all
    expired before any worker runs."""
    app = duetime.App(redis_url, namespace=namespace)
    cache = app.expiring("work", ttl=TTL_SECONDS)
    first = {f"e{i}": {"v": 0} for i in range(ENTRIES)}
    last = {f"e{i}": {"v": i} for i in range(ENTRIES)}
    begun = time.monotonic()
    await cache.put_many(first)
    await cache.put_many(last)  # before the expiry: replaces the value, restarts the TTL
    assert time.monotonic() - begun < TTL_SECONDS, "the puts took longer than the TTL"
    await asyncio.sleep(TTL_SECONDS + 0.5)  # expired, and no worker ran
    assert await cache.get("e0") is None
    await app.close()


@pytest.mark.slow
async def test_entries_expired_while_every_worker_was_down_are_each_handled_once(
    redis_url: str, namespace: str, workers: Workers
) -> None:
    await _put_expired(redis_url, namespace)

    for _ in range(2):
        workers.start(redis_url, namespace, expiring=0.5, concurrency=64).wait_ready()
    await eventually(lambda: len(_values(workers)) == ENTRIES, 60, "every entry handled")
    await asyncio.sleep(1.0)  # none twice

    values = _values(workers)
    assert all(len(seen) == 1 for seen in values.values()), "an entry handled twice"
    assert {key: seen[0] for key, seen in values.items()} == {
        f"e{i}": {"v": i} for i in range(ENTRIES)
    }
    assert all(w.alive() for w in workers.started), workers.logs()


@pytest.mark.slow
async def test_entries_and_key_expiries_survive_pubsub_connections_killed_mid_run(
    redis_url: str, namespace: str, workers: Workers, admin: aredis.Redis
) -> None:
    await _put_expired(redis_url, namespace)
    pattern = f"{namespace}:k*@{DB}"
    for _ in range(2):
        workers.start(
            redis_url, namespace, expiring=0.5, concurrency=64, key_expired=pattern
        ).wait_ready()
    kills = 0
    for _ in range(10):  # while the entries are handled
        kills += await admin.client_kill_filter(_type="pubsub")
        await asyncio.sleep(0.05)
    assert kills >= 2

    await eventually(lambda: len(_values(workers)) == ENTRIES, 60, "every entry handled")
    await asyncio.sleep(0.5)  # the listeners have reconnected
    keys = redis.Redis.from_url(redis_url.rsplit("/", 1)[0] + f"/{DB}")
    try:
        for i in range(20):
            keys.set(f"{namespace}:k{i}", "x", px=100)
    finally:
        keys.close()

    def fired() -> Counter[str]:
        return counts(workers.ledger(), "effect")

    wanted = {f"{namespace}:k{i}" for i in range(20)}
    await eventually(lambda: wanted <= set(fired()), 10, "the handler fired after the kills")
    await asyncio.sleep(0.5)
    assert all(fired()[key] == 1 for key in wanted)
    assert all(len(seen) == 1 for seen in _values(workers).values())


@pytest.mark.slow
async def test_three_workers_handle_each_expired_key_once(
    redis_url: str, namespace: str, workers: Workers
) -> None:
    # One handler at a time per worker, each 10 ms: no worker can take every key alone, so
    # that the events are shared is certain, not a race the fastest worker may win.
    for _ in range(3):
        workers.start(
            redis_url,
            namespace,
            key_expired=f"{namespace}:s*@{DB}",
            concurrency=1,
            mode="sleep:0.01",
        ).wait_ready()
    await asyncio.sleep(0.5)  # all three listen
    keys = redis.Redis.from_url(redis_url.rsplit("/", 1)[0] + f"/{DB}")
    try:
        for i in range(200):
            keys.set(f"{namespace}:s{i}", "x", px=100 + i)
    finally:
        keys.close()
    wanted = {f"{namespace}:s{i}" for i in range(200)}

    def fired() -> Counter[str]:
        return counts(workers.ledger(), "effect")

    await eventually(lambda: wanted <= set(fired()), 15, "every key handled")
    await asyncio.sleep(1.0)
    assert {key: n for key, n in fired().items() if n != 1} == {}
    assert len({entry.pid for entry in workers.ledger()}) >= 2  # the work was shared
