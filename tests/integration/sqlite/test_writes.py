"""Durability, locks, big batches and namespaces in one file."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest

import duetime
from duetime.stores.base import NewTask
from duetime.stores.sqlite.config import parse_sqlite_url
from duetime.stores.sqlite.connection import Database
from duetime.stores.sqlite.ops import SCHEDULE_ROWS
from duetime.stores.sqlite.store import SqliteStore
from tests.helpers import record_text
from tests.integration.sqlite.support import REC, T0, make_store, url_of


async def _synchronous(store: SqliteStore) -> int:
    def read(db: Database) -> int:
        return int(db.conn.execute("PRAGMA synchronous").fetchone()[0])

    return await store._on_thread("test", read)


async def test_synchronous_is_full_by_default_without_warnings(store: SqliteStore) -> None:
    assert await _synchronous(store) == 2  # FULL
    assert store.durability_warnings() == []


async def test_synchronous_normal_is_faster_and_says_what_it_may_lose(tmp_path: Path) -> None:
    store = make_store(tmp_path / "fast.db", query="synchronous=normal")
    await store.open()
    try:
        assert await _synchronous(store) == 1  # NORMAL
        (warning,) = store.durability_warnings()
    finally:
        await store.close()
    assert "synchronous=normal" in warning and "power cut" in warning
    assert "synchronous=full" in warning


async def test_a_batch_that_fails_midway_writes_nothing(store: SqliteStore, tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "duetime.db")
    with conn:
        conn.execute(
            "CREATE TRIGGER poison BEFORE INSERT ON duetime_tasks WHEN NEW.id = 'poison' "
            "BEGIN SELECT RAISE(ABORT, 'poisoned'); END"
        )
    conn.close()
    batch = [NewTask("a", T0, REC), NewTask("b", T0, REC), NewTask("poison", T0, REC)]

    with pytest.raises(duetime.StoreError, match="poisoned"):
        await store.schedule("mail", batch)

    assert await store.count("mail") == {"due": 0, "running": 0, "dead": 0}


async def test_a_lock_held_too_long_is_store_unavailable_naming_the_timeout(
    tmp_path: Path,
) -> None:
    path = tmp_path / "busy.db"
    store = make_store(path, query="busy_timeout_ms=200")
    await store.open()
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        t0 = time.monotonic()
        with pytest.raises(duetime.StoreUnavailable) as caught:
            await store.schedule("mail", [NewTask("a", T0, REC)])
        waited = time.monotonic() - t0
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
        await store.close()
    assert 0.15 < waited < 2
    assert "busy_timeout_ms" in str(caught.value) and str(path) in str(caught.value)


async def test_a_write_waits_for_a_lock_held_briefly(tmp_path: Path) -> None:
    path = tmp_path / "busy.db"
    store = make_store(path)
    await store.open()
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        write = asyncio.create_task(store.schedule("mail", [NewTask("a", T0, REC)]))
        await asyncio.sleep(0.3)
        assert not write.done()
        blocker.execute("COMMIT")
        await asyncio.wait_for(write, 5)
        assert (await store.count("mail"))["due"] == 1
    finally:
        blocker.close()
        await store.close()


@pytest.mark.parametrize("n", [SCHEDULE_ROWS - 1, SCHEDULE_ROWS, 2 * SCHEDULE_ROWS + 1])
async def test_a_batch_written_many_rows_a_statement_keeps_every_task(
    store: SqliteStore, n: int
) -> None:
    tasks = [NewTask(f"t{i}", T0 + i, record_text(f'{{"i":{i}}}')) for i in range(n)]
    tasks.append(NewTask("t0", T0 - 1, REC))  # a repeated id: the last one wins

    await store.schedule("mail", tasks)

    rows = await store.list_tasks("mail", "due", n + 10)
    assert [(r.id, r.due_ms) for r in rows] == [("t0", T0 - 1)] + [
        (f"t{i}", T0 + i) for i in range(1, n)
    ]
    assert rows[0].record == REC and rows[-1].record == tasks[n - 1].record


async def test_namespaces_share_a_file_apart(tmp_path: Path) -> None:
    one, two = make_store(tmp_path / "x.db", "one"), make_store(tmp_path / "x.db", "two")
    await one.open()
    await two.open()
    try:
        await one.schedule("mail", [NewTask("a", T0, REC)])
        await two.schedule("mail", [NewTask("a", T0 + 5, REC), NewTask("b", T0, REC)])
        batch = await one.claim(
            "mail", now_ms=T0 + 10, limit=10, lease_ms=1000, max_stalls=0, at_most_once=False
        )
        assert [(c.id, c.token) for c in batch.claims] == [("a", 1)]
        assert await two.count("mail") == {"due": 2, "running": 0, "dead": 0}
        assert (await two.get("mail", "a")).due_ms == T0 + 5  # type: ignore[union-attr]
    finally:
        await one.close()
        await two.close()


def test_a_lock_held_past_a_thousand_retries_is_store_unavailable_not_overflow(
    tmp_path: Path,
) -> None:
    # Another connection holds the write lock for the whole busy timeout (10 s on a clock of
    # the test's own, advanced by each wait): about 3,000 busy retries, past the 1,025th,
    # whose back-off overflowed a float (OverflowError instead of StoreUnavailable).
    path = tmp_path / "busy.db"
    db = Database.open(parse_sqlite_url(url_of(path, "busy_timeout_ms=10000"), namespace="ns"))
    now = [0.0]
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    db.monotonic, db.sleep = lambda: now[0], sleep
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(duetime.StoreUnavailable, match="busy_timeout_ms"):
            db.write(lambda conn: conn.execute("DELETE FROM duetime_tasks"))
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
        db.close()
    assert len(waits) > 1025 and now[0] == pytest.approx(10)
