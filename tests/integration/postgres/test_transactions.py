"""``connection=`` on PostgreSQL: the producer's calls write in the application's own
transaction (docs/transactions.md), with the store's statements, on psycopg 3 connections."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

import duetime
from tests.helpers import eventually, running
from tests.postgres import fresh_schema

IDLE = duetime.Pacing(max_idle=timedelta(hours=1))  # only a wake-up makes a worker look


@pytest.fixture
def url() -> Iterator[str]:
    with fresh_schema() as schema_url:
        yield schema_url


def dsn(url: str) -> str:
    return url.split("?")[0]  # the database, without duetime's options


@pytest.fixture
async def app(url: str) -> AsyncIterator[duetime.App]:
    app = duetime.App(url, namespace="tx")
    app.declare("mail", "fresh")
    await app.open()
    yield app
    await app.close()


@pytest.fixture
async def conn(url: str) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    async with await psycopg.AsyncConnection.connect(dsn(url)) as conn:
        await conn.execute("CREATE TABLE IF NOT EXISTS public.users_tx (id text)")
        await conn.commit()
        yield conn


class Claims(duetime.Listener):
    def __init__(self) -> None:
        self.ids: list[str] = []
        self.event = asyncio.Event()

    def claimed(self, event: duetime.WorkerEvent) -> None:
        self.ids.append(event.task_id)
        self.event.set()


async def test_a_rolled_back_transaction_leaves_no_task(
    app: duetime.App, conn: psycopg.AsyncConnection[Any]
) -> None:
    async with conn.transaction(force_rollback=True):
        await conn.execute("INSERT INTO public.users_tx VALUES ('u1')")
        await app.schedule("mail", "m1", payload={"to": "u1"}, connection=conn)
        await app.schedule("fresh", "f1", priority=5, group="g", connection=conn)
        await app.schedule_many([duetime.Task("mail", "m2")], connection=conn)
        assert await app.get("mail", "m1") is None  # not before the commit
    assert await app.get("mail", "m1") is None
    assert await app.get("fresh", "f1") is None
    assert await app.list("mail", "due") == []
    # What the rolled-back transaction found (the new type's queue) is not kept: the same
    # type, a priority and a group are written afresh.
    await app.schedule("fresh", "f2", priority=5, group="g")
    found = await app.get("fresh", "f2")
    assert found is not None and (found.priority, found.group) == (5, "g")


async def test_a_commit_wakes_a_sleeping_worker_at_the_commit(
    app: duetime.App, conn: psycopg.AsyncConnection[Any]
) -> None:
    ran: list[str] = []

    @app.task("welcome", pacing=IDLE)
    async def welcome(payload: dict[str, Any]) -> None:
        ran.append(payload["to"])

    claims = Claims()
    async with running(app, listeners=[claims]):
        async with conn.transaction():
            await conn.execute("INSERT INTO public.users_tx VALUES ('u2')")
            await app.schedule("welcome", "w1", payload={"to": "u2"}, connection=conn)
            # due at once, yet no worker can see it before the commit
            assert await app.get("welcome", "w1") is None
            assert not claims.event.is_set()
        await asyncio.wait_for(claims.event.wait(), 10)
    assert claims.ids == ["w1"]


async def test_every_option_works_in_a_transaction(
    app: duetime.App, conn: psycopg.AsyncConnection[Any]
) -> None:
    await app.schedule("mail", "k", delay=60, payload={"v": 1})
    await app.schedule("mail", "g", delay=60, payload={"a": {"x": 1}})
    async with conn.transaction():
        # the first write of a type, with a priority and a group
        await app.schedule("fresh", "p", delay=60, priority=7, group="team", connection=conn)
        kept = await app.schedule("mail", "k", payload={"v": 2}, if_exists="keep", connection=conn)
        await app.schedule("mail", "g", payload={"a": {"y": 2}}, if_exists="merge", connection=conn)
        await app.schedule("mail", "r", delay=10, payload={"v": 3}, connection=conn)
        once = await app.schedule("mail", "u", unique_for=60, connection=conn)
        assert once is not None
        await app.submit("mail", connection=conn)
    fresh = await app.get("fresh", "p")
    assert fresh is not None and (fresh.priority, fresh.group) == (7, "team")
    k = await app.get("mail", "k")
    assert k is not None and k.payload == {"v": 1} and kept == k.due
    g = await app.get("mail", "g")
    assert g is not None and g.payload == {"a": {"x": 1, "y": 2}}
    assert await app.get("mail", "r") is not None
    assert await app.get("mail", "u") is not None
    assert (await app.counts("mail"))["due"] == 5


async def test_cancel_in_a_transaction_rolls_back_with_it(
    app: duetime.App, conn: psycopg.AsyncConnection[Any]
) -> None:
    await app.schedule("mail", "c", delay=60)
    async with conn.transaction(force_rollback=True):
        assert await app.cancel("mail", "c", connection=conn)
    assert await app.get("mail", "c") is not None
    async with conn.transaction():
        assert await app.cancel("mail", "c", connection=conn)
    assert await app.get("mail", "c") is None


def test_a_sync_connection_through_app_sync(url: str) -> None:
    app = duetime.App(url, namespace="tx")
    app.declare("mail")
    with app.sync() as client, psycopg.connect(dsn(url)) as conn:
        with conn.transaction():
            client.schedule("mail", "s1", delay=60, connection=conn)
            assert client.get("mail", "s1") is None
        assert client.get("mail", "s1") is not None
        with conn.transaction(force_rollback=True):
            client.schedule_many([duetime.Task("mail", "s2")], connection=conn)
        assert client.get("mail", "s2") is None
        # the connection's own search path is as it was
        assert conn.execute("SHOW search_path").fetchone() == ('"$user", public',)


async def test_autocommit_writes_at_once(app: duetime.App, url: str) -> None:
    async with await psycopg.AsyncConnection.connect(dsn(url), autocommit=True) as conn:
        await app.schedule("mail", "a1", delay=60, payload={"v": 1}, connection=conn)
        await app.schedule("mail", "a1", payload={"v": 2}, if_exists="merge", connection=conn)
    found = await app.get("mail", "a1")
    assert found is not None and found.payload == {"v": 2}


async def test_connections_it_cannot_use_are_refused(
    app: duetime.App, url: str, conn: psycopg.AsyncConnection[Any]
) -> None:
    with pytest.raises(duetime.ConfigError, match=r"sqlite3\.Connection"):
        await app.schedule("mail", "x", connection=sqlite3.connect(":memory:"))
    with pytest.raises(duetime.ConfigError, match="builtins.str"):
        await app.schedule("mail", "x", connection="postgresql://")
    other = dsn(url).rsplit("/", 1)[0] + "/postgres"
    async with await psycopg.AsyncConnection.connect(other) as elsewhere:
        with pytest.raises(duetime.ConfigError, match="database 'postgres'"):
            await app.schedule("mail", "x", connection=elsewhere)
    with pytest.raises(psycopg.errors.DivisionByZero):
        await conn.execute("SELECT 1/0")
    with pytest.raises(duetime.ConfigError, match="failed"):
        await app.schedule("mail", "x", connection=conn)
    await conn.rollback()
    await conn.close()
    with pytest.raises(duetime.ConfigError, match="closed"):
        await app.schedule("mail", "x", connection=conn)
    assert await app.get("mail", "x") is None


async def test_the_store_schema_is_written_whatever_the_connection_search_path(
    app: duetime.App, url: str
) -> None:
    with fresh_schema() as other_url:
        other = duetime.App(other_url, namespace="tx")
        other.declare("mail")
        await other.open()  # duetime's tables in another schema of the same database
        try:
            schema = other_url.split("schema=")[1]
            async with await psycopg.AsyncConnection.connect(dsn(url)) as conn:
                await conn.execute(f"SET search_path = {schema}")
                async with conn.transaction():
                    await app.schedule("mail", "here", delay=60, connection=conn)
                assert (await (await conn.execute("SHOW search_path")).fetchone()) == (schema,)
            assert await app.get("mail", "here") is not None
            assert await other.get("mail", "here") is None
        finally:
            await other.close()


def test_a_producer_killed_in_its_transaction_leaves_no_task(url: str, tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[3]
    signalled = tmp_path / "scheduled"
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{root / 'src'}"}
    args = [sys.executable, "-m", "tests.integration.postgres.tx_producer"]
    producer = subprocess.Popen(
        [*args, url, dsn(url), str(signalled)], cwd=root, env=env, stderr=subprocess.DEVNULL
    )
    try:
        asyncio.run(eventually(signalled.exists, within=30, what="the schedule"))
    finally:
        producer.send_signal(signal.SIGKILL)
        producer.wait(30)
    app = duetime.App(url, namespace="tx")
    app.declare("mail")
    with app.sync() as client:
        assert client.get("mail", "killed") is None
        assert client.counts("mail") == {"due": 0, "running": 0, "dead": 0}


async def test_merges_from_two_concurrent_transactions_both_land(
    app: duetime.App, url: str
) -> None:
    await app.schedule("mail", "mm", delay=60, payload={"base": 0})
    async with (
        await psycopg.AsyncConnection.connect(dsn(url)) as first,
        await psycopg.AsyncConnection.connect(dsn(url)) as second,
    ):
        await app.schedule("mail", "mm", payload={"a": 1}, if_exists="merge", connection=first)
        # the second waits for the first's row lock, then merges into what it committed
        merging = asyncio.create_task(
            app.schedule("mail", "mm", payload={"b": 2}, if_exists="merge", connection=second)
        )
        pid = second.info.backend_pid

        async def waits() -> bool:
            async with await psycopg.AsyncConnection.connect(dsn(url)) as look:
                cur = await look.execute(
                    "SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted", (pid,)
                )
                return await cur.fetchone() is not None

        await eventually(waits, within=10, what="the second transaction waiting on the first")
        await first.commit()
        await asyncio.wait_for(merging, 10)
        await second.commit()
    found = await app.get("mail", "mm")
    assert found is not None and found.payload == {"base": 0, "a": 1, "b": 2}


async def test_an_expiring_group_puts_and_deletes_in_a_transaction(
    app: duetime.App, conn: psycopg.AsyncConnection[Any]
) -> None:
    cache = app.expiring("pending", ttl=timedelta(hours=1))
    async with conn.transaction(force_rollback=True):
        await cache.put("k1", {"v": 1}, connection=conn)
    assert await cache.get("k1") is None
    async with conn.transaction():
        await cache.put_many([("k1", {"v": 1}), ("k2", 2)], connection=conn)
    assert await cache.get("k1") == {"v": 1}
    async with conn.transaction(force_rollback=True):
        assert await cache.delete("k2", connection=conn)
    assert await cache.get("k2") == 2
    async with conn.transaction():
        assert await cache.delete("k2", connection=conn)
    assert await cache.get("k2") is None
