"""``connection=`` on SQLite: the producer's calls write in the application's own
transaction on a ``sqlite3.Connection`` to the store's file (docs/transactions.md)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import duetime
from tests.helpers import running

IDLE = duetime.Pacing(max_idle=timedelta(hours=1))  # only a wake-up makes a worker look


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "app.db"


@pytest.fixture
async def app(path: Path) -> AsyncIterator[duetime.App]:
    app = duetime.App(f"sqlite:///{path}", namespace="tx")
    app.declare("mail", "fresh")
    await app.open()
    yield app
    await app.close()


@pytest.fixture
def db(app: duetime.App, path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE IF NOT EXISTS orders (id TEXT)")
    conn.commit()
    yield conn
    conn.close()


class Claims(duetime.Listener):
    def __init__(self) -> None:
        self.ids: list[str] = []
        self.event = asyncio.Event()

    def claimed(self, event: duetime.WorkerEvent) -> None:
        self.ids.append(event.task_id)
        self.event.set()


async def test_a_rolled_back_transaction_leaves_no_task(
    app: duetime.App, db: sqlite3.Connection
) -> None:
    db.execute("INSERT INTO orders VALUES ('o1')")
    await app.schedule("mail", "m1", payload={"to": "o1"}, connection=db)
    await app.schedule("fresh", "f1", priority=5, group="g", connection=db)
    await app.schedule_many([duetime.Task("mail", "m2")], connection=db)
    assert db.in_transaction
    db.rollback()
    assert await app.get("mail", "m1") is None
    assert await app.get("fresh", "f1") is None
    assert await app.list("mail", "due") == []
    assert db.execute("SELECT count(*) FROM orders").fetchone() == (0,)
    await app.schedule("fresh", "f2", priority=5, group="g")  # the new type, written afresh
    found = await app.get("fresh", "f2")
    assert found is not None and (found.priority, found.group) == (5, "g")


async def test_a_commit_wakes_a_sleeping_worker_after_the_commit(
    app: duetime.App, db: sqlite3.Connection
) -> None:
    @app.task("ship", pacing=IDLE)
    async def ship(payload: dict[str, Any]) -> None: ...

    claims = Claims()
    async with running(app, listeners=[claims]):
        with db:  # commits at the end of the block
            db.execute("INSERT INTO orders VALUES ('o2')")
            await app.schedule("ship", "s1", connection=db)  # due at once
            assert not claims.event.is_set()
        await asyncio.wait_for(claims.event.wait(), 10)
    assert claims.ids == ["s1"]


async def test_every_option_works_in_a_transaction(
    app: duetime.App, db: sqlite3.Connection
) -> None:
    await app.schedule("mail", "k", delay=60, payload={"v": 1})
    await app.schedule("mail", "g", delay=60, payload={"a": {"x": 1}})
    with db:
        await app.schedule("fresh", "p", delay=60, priority=7, group="team", connection=db)
        kept = await app.schedule("mail", "k", payload={"v": 2}, if_exists="keep", connection=db)
        await app.schedule("mail", "g", payload={"a": {"y": 2}}, if_exists="merge", connection=db)
        await app.schedule("mail", "r", delay=10, connection=db)
        assert await app.schedule("mail", "u", unique_for=60, connection=db) is not None
        await app.submit("mail", connection=db)
        assert await app.cancel("mail", "r", connection=db)
    fresh = await app.get("fresh", "p")
    assert fresh is not None and (fresh.priority, fresh.group) == (7, "team")
    k = await app.get("mail", "k")
    assert k is not None and k.payload == {"v": 1} and kept == k.due
    g = await app.get("mail", "g")
    assert g is not None and g.payload == {"a": {"x": 1, "y": 2}}
    assert await app.get("mail", "r") is None
    assert (await app.counts("mail"))["due"] == 4


def test_a_connection_through_app_sync(path: Path) -> None:
    app = duetime.App(f"sqlite:///{path}", namespace="tx")
    app.declare("mail")
    with app.sync() as client:
        mine = sqlite3.connect(path)  # made on this thread: the client's runs on another
        with pytest.raises(duetime.ConfigError, match="check_same_thread=False"):
            client.schedule("mail", "x", connection=mine)
        mine.close()
        shared = sqlite3.connect(path, check_same_thread=False)
        with shared:
            client.schedule("mail", "s1", delay=60, connection=shared)
        assert client.get("mail", "s1") is not None
        client.schedule("mail", "s2", connection=shared)
        shared.rollback()
        assert client.get("mail", "s2") is None
        shared.close()


async def test_connections_it_cannot_use_are_refused(
    app: duetime.App, db: sqlite3.Connection, tmp_path: Path
) -> None:
    with pytest.raises(duetime.ConfigError, match="builtins.object"):
        await app.schedule("mail", "x", connection=object())
    with pytest.raises(duetime.ConfigError, match="in memory"):
        await app.schedule("mail", "x", connection=sqlite3.connect(":memory:"))
    other = sqlite3.connect(tmp_path / "other.db")
    with pytest.raises(duetime.ConfigError, match="other.db"):
        await app.schedule("mail", "x", connection=other)
    other.close()
    with pytest.raises(duetime.ConfigError, match="closed"):
        await app.schedule("mail", "x", connection=other)
    assert await app.get("mail", "x") is None
