"""``ctx.complete(connection=...)`` on PostgreSQL: a handler finishes its task in its own
transaction, fenced by its claim's token (docs/transactions.md)."""

from __future__ import annotations

import asyncio
import os
import signal
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

ROOT = Path(__file__).resolve().parents[3]
FAST = duetime.Backoff(base=timedelta(milliseconds=20), jitter=0)


@pytest.fixture
def url() -> Iterator[str]:
    with fresh_schema() as schema_url:
        yield schema_url


def dsn(url: str) -> str:
    return url.split("?")[0]


def table(url: str) -> str:
    """The test's own table of the application's rows: in the test's schema, not duetime's
    tables."""
    return url.split("schema=")[1] + ".paid"


def make_table(url: str) -> None:
    with psycopg.connect(dsn(url), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {url.split('schema=')[1]}")
        conn.execute(f"CREATE TABLE {table(url)} (id text)")


@pytest.fixture
async def app(url: str) -> AsyncIterator[duetime.App]:
    make_table(url)
    app = duetime.App(url, namespace="tx")
    yield app
    await app.close()


async def paid(url: str) -> list[str]:
    async with await psycopg.AsyncConnection.connect(dsn(url)) as conn:
        cur = await conn.execute(f"SELECT id FROM {table(url)} ORDER BY id")
        return [str(row[0]) for row in await cur.fetchall()]


async def test_a_completion_commits_with_the_handler_rows(app: duetime.App, url: str) -> None:
    runs: list[int] = []

    @app.task("pay")
    async def pay(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs.append(ctx.attempt)
        async with await psycopg.AsyncConnection.connect(dsn(url)) as conn:
            async with conn.transaction():
                await conn.execute(f"INSERT INTO {table(url)} VALUES (%s)", (ctx.task_id,))
                await ctx.complete(connection=conn)
                # not before the commit: the task still runs, as the store sees it
                found = await app.get("pay", ctx.task_id)
                assert found is not None and found.state == "running"

    async with running(app):
        await app.schedule("pay", "p1")
        await eventually(lambda: runs == [1], what="the run")
        await eventually(lambda: _gone(app, "p1"), what="the task done")
    assert await paid(url) == ["p1"]
    assert runs == [1]


async def _gone(app: duetime.App, task_id: str) -> bool:
    return await app.get("pay", task_id) is None


async def test_a_rolled_back_completion_leaves_the_handler_outcome(
    app: duetime.App, url: str
) -> None:
    runs: list[int] = []

    @app.task("pay", retries=2, backoff=FAST)
    async def pay(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs.append(ctx.attempt)
        if ctx.attempt > 1:
            return
        async with await psycopg.AsyncConnection.connect(dsn(url)) as conn:
            async with conn.transaction():
                await conn.execute(f"INSERT INTO {table(url)} VALUES (%s)", (ctx.task_id,))
                await ctx.complete(connection=conn)
                raise RuntimeError("after complete, inside the transaction")

    async with running(app):
        await app.schedule("pay", "p2")
        await eventually(lambda: runs == [1, 2], what="the retry")
        await eventually(lambda: _gone(app, "p2"), what="the task done")
    assert await paid(url) == []  # the first attempt's row went with its rollback


async def test_a_stale_claim_cannot_complete(app: duetime.App, url: str) -> None:
    seen: list[str] = []

    @app.task("pay")
    async def pay(payload: dict[str, Any], ctx: duetime.Context) -> None:
        assert ctx.claim is not None
        stale = ctx._replace(claim=ctx.claim._replace(token=ctx.claim.token + 1))
        async with await psycopg.AsyncConnection.connect(dsn(url)) as conn:
            async with conn.transaction():
                await conn.execute(f"INSERT INTO {table(url)} VALUES (%s)", (ctx.task_id,))
                try:
                    await stale.complete(connection=conn)
                except duetime.LeaseLost as exc:
                    seen.append(type(exc).__name__)
                    raise

    async with running(app):
        await app.schedule("pay", "p3")
        await eventually(lambda: seen == ["LeaseLost"], what="the refused completion")
    assert await paid(url) == []


async def test_complete_is_refused_outside_a_worker_and_for_a_series(
    app: duetime.App, url: str
) -> None:
    app.declare("pay")
    ctx = duetime.Context("pay", "x", duetime.clock.from_ms(0), 1, "x@0", 1, app)
    with pytest.raises(duetime.ConfigError, match="only within a handler"):
        await ctx.complete(connection=None)


def test_a_worker_killed_after_the_commit_never_runs_the_task_again(
    url: str, tmp_path: Path
) -> None:
    make_table(url)
    app = duetime.App(url, namespace="tx")
    app.declare("pay")
    with app.sync() as client:
        client.schedule("pay", "k1")
    done = tmp_path / "committed"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    args = [sys.executable, "-m", "tests.integration.postgres.complete_worker"]
    worker = subprocess.Popen(
        [*args, url, dsn(url), table(url), str(done)], cwd=ROOT, env=env, stderr=subprocess.DEVNULL
    )
    try:
        asyncio.run(eventually(done.exists, within=30, what="the handler's commit"))
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(30)
    assert done.read_text() == "k1 1\n"
    with app.sync() as client:
        assert client.get("pay", "k1") is None  # done: nothing left to run, lease or not
        assert client.counts("pay") == {"due": 0, "running": 0, "dead": 0}
    assert asyncio.run(paid(url)) == ["k1"]


async def test_an_exception_after_the_commit_changes_nothing(
    app: duetime.App, url: str, caplog: pytest.LogCaptureFixture
) -> None:
    runs: list[int] = []

    @app.task("pay", retries=2, backoff=FAST)
    async def pay(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs.append(ctx.attempt)
        async with await psycopg.AsyncConnection.connect(dsn(url)) as conn:
            async with conn.transaction():
                await conn.execute(f"INSERT INTO {table(url)} VALUES (%s)", (ctx.task_id,))
                await ctx.complete(connection=conn)
        raise RuntimeError("after the commit")

    async with running(app):
        await app.schedule("pay", "p4")
        await eventually(lambda: runs == [1], what="the run")
        # the worker's own outcome (a retry) found the lease gone, and wrote nothing
        dropped = "lease lost before its outcome (retry) was kept"
        await eventually(lambda: dropped in caplog.text, what="the worker's settle")
        assert await app.get("pay", "p4") is None
    assert runs == [1]  # done: not retried
    assert await paid(url) == ["p4"]
