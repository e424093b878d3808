"""``ctx.complete(connection=...)`` on SQLite: a handler finishes its task in its own
transaction on a connection to the store's file (docs/transactions.md)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import duetime
from tests.helpers import eventually, running

FAST = duetime.Backoff(base=timedelta(milliseconds=20), jitter=0)


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[duetime.App]:
    app = duetime.App(f"sqlite:///{tmp_path / 'app.db'}", namespace="tx")
    await app.open()
    conn = sqlite3.connect(tmp_path / "app.db")
    conn.execute("CREATE TABLE paid (id TEXT)")
    conn.commit()
    conn.close()
    yield app
    await app.close()


def paid(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [str(row[0]) for row in conn.execute("SELECT id FROM paid ORDER BY id")]
    finally:
        conn.close()


async def test_a_completion_commits_with_the_handler_rows(app: duetime.App, tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    runs: list[int] = []

    @app.task("pay", retries=2, backoff=FAST)
    async def pay(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs.append(ctx.attempt)
        conn = sqlite3.connect(path)
        try:
            with conn:  # commits, or rolls back on an exception
                conn.execute("INSERT INTO paid VALUES (?)", (f"{ctx.task_id}-{ctx.attempt}",))
                await ctx.complete(connection=conn)
                if payload.get("fail") and ctx.attempt == 1:
                    raise RuntimeError("after complete, inside the transaction")
        finally:
            conn.close()

    async with running(app):
        await app.schedule("pay", "ok")
        await app.schedule("pay", "again", payload={"fail": True})
        await eventually(lambda: sorted(runs) == [1, 1, 2], what="the runs and the retry")
        await eventually(lambda: _gone(app, "ok"), what="ok done")
        await eventually(lambda: _gone(app, "again"), what="again done")
    assert paid(path) == ["again-2", "ok-1"]


async def _gone(app: duetime.App, task_id: str) -> bool:
    return await app.get("pay", task_id) is None
