"""duetime.admin.bulk on Redis and SQLite: thousands of tasks retried or cancelled a page at a
time, with the listing changing under the run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

import duetime
from duetime.admin import bulk
from duetime.stores.base import Store
from tests.helpers import make_dead

MANY = 3000


@pytest.fixture
async def app(redis_or_sqlite_url: str, namespace: str) -> AsyncIterator[duetime.App]:
    app = duetime.App(redis_or_sqlite_url, namespace=namespace)
    app.declare("mail", "report")
    app.declare("split", partitions=4)
    yield app
    await app.close()


async def test_every_dead_task_is_retried_with_progress(app: duetime.App) -> None:
    await make_dead(app, "mail", MANY)
    await app.schedule("mail", "waiting", delay=timedelta(hours=1))
    seen: list[tuple[int, int]] = []

    retried = await bulk.retry_all(app, "mail", progress=lambda d, t: seen.append((d, t)))

    assert retried == MANY
    assert await app.counts("mail") == {"due": MANY + 1, "running": 0, "dead": 0}
    assert seen[-1] == (MANY, MANY) and len(seen) >= MANY // bulk.BATCH
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    info = await app.get("mail", "d1234")
    assert info is not None and info.state == "due" and info.attempts == 0 and not info.error


async def test_every_dead_task_of_a_partitioned_type_is_cancelled(app: duetime.App) -> None:
    await make_dead(app, "split", 1000)
    await app.schedule_many(
        duetime.Task("split", f"w{n}", delay=timedelta(hours=1)) for n in range(50)
    )

    assert await bulk.cancel_all(app, "split", "dead") == 1000
    assert await app.counts("split") == {"due": 50, "running": 0, "dead": 0}
    assert await bulk.cancel_all(app, "split", "dead") == 0


async def test_due_and_running_tasks_are_cancelled_and_dead_ones_kept(app: duetime.App) -> None:
    await make_dead(app, "mail", 300)
    await app.schedule_many(duetime.Task("mail", f"r{n}") for n in range(450))
    store: Store = await app.open()
    batch = await store.claim(
        "mail",
        now_ms=await app.now_ms(),
        limit=450,
        lease_ms=60_000,
        max_stalls=0,
        at_most_once=False,
    )
    assert len(batch.claims) == 450
    await app.schedule_many(
        duetime.Task("mail", f"f{n}", delay=timedelta(hours=1)) for n in range(700)
    )

    assert await bulk.cancel_all(app, "mail", "running") == 450
    assert await bulk.cancel_all(app, "mail", "due") == 700
    # Cancelled running tasks keep their lease until their run ends, with no record.
    assert await app.counts("mail") == {"due": 0, "running": 450, "dead": 300}
    assert await bulk.cancel_all(app, "mail", "running") == 0


async def test_tasks_dying_during_a_retry_all_are_left_dead(app: duetime.App) -> None:
    """The listing changes under the run: every task is either retried once or still dead,
    none twice, and the run ends although tasks keep dying."""
    await make_dead(app, "mail", MANY)
    retried, _ = await asyncio.gather(
        bulk.retry_all(app, "mail"), make_dead(app, "mail", 500, prefix="late")
    )

    counts = await app.counts("mail")
    assert counts["due"] == retried and counts["due"] + counts["dead"] == MANY + 500
    assert MANY <= retried <= MANY + 500
    for n in range(0, MANY, 97):
        info = await app.get("mail", f"d{n}")
        assert info is not None and info.state == "due"


async def test_bad_arguments_change_nothing(app: duetime.App) -> None:
    await make_dead(app, "mail", 3)
    with pytest.raises(duetime.ValidationError, match="state"):
        await bulk.cancel_all(app, "mail", "lost")  # type: ignore[arg-type]
    with pytest.raises(duetime.UnknownTaskType):
        await bulk.retry_all(app, "mial")
    assert (await app.counts("mail"))["dead"] == 3
