"""A task type over several partitions, on each store: the same calls and guarantees as
one partition, and a count that cannot change under tasks."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

import duetime
from duetime.partitions.layout import part_name, partition_of
from tests.helpers import count_is, eventually, running


async def test_every_task_of_a_partitioned_type_runs_once_and_is_found_by_id(
    app: duetime.App,
) -> None:
    runs: Counter[str] = Counter()

    @app.task("sendEmail", partitions=4, concurrency=8)
    async def send(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs[ctx.task_id] += 1

    ids = [f"user-{n}" for n in range(40)]
    assert len({partition_of(i, 4) for i in ids}) == 4  # the ids spread over every partition
    for task_id in ids:
        await app.schedule("sendEmail", task_id, delay=timedelta(seconds=30), payload={"n": 1})
    later = await app.schedule("sendEmail", "user-3", delay=timedelta(hours=1))  # moves it
    info = await app.get("sendEmail", "user-3")
    assert info is not None and info.due == later
    assert await app.cancel("sendEmail", "user-5") is True
    assert (await app.counts("sendEmail"))["due"] == 39
    listed = await app.list("sendEmail", limit=100)
    dues = [t.due for t in listed if t.due is not None]
    assert dues == sorted(dues) and len(dues) == len(listed) == 39
    page = await app.list("sendEmail", limit=10, offset=5)
    assert [t.task_id for t in page] == [t.task_id for t in listed[5:15]]

    await app.schedule_many(
        [duetime.Task("sendEmail", i) for i in ids if i not in ("user-3", "user-5")]
    )  # all due now
    async with running(app):
        await eventually(lambda: sum(runs.values()) == 38, what="every due task ran")
        # Settled: nothing is left to run again (the worker stops at the block's end).
        await eventually(lambda: count_is(app, "sendEmail", "running", 0), what="all settled")
    assert set(runs.values()) == {1} and "user-3" not in runs
    assert await app.counts("sendEmail") == {"due": 1, "running": 0, "dead": 0}


async def test_retries_dead_letters_and_series_stay_in_their_partition(app: duetime.App) -> None:
    attempts: Counter[str] = Counter()
    ticks: list[str] = []

    @app.task(
        "flaky",
        partitions=3,
        retries=1,
        backoff=duetime.Backoff(base=timedelta(milliseconds=10), jitter=0),
    )
    async def flaky(payload: dict[str, Any], ctx: duetime.Context) -> None:
        attempts[ctx.task_id] += 1
        raise RuntimeError("always")

    @app.task("series", partitions=3)
    async def series(payload: dict[str, Any], ctx: duetime.Context) -> None:
        ticks.append(ctx.occurrence)

    for n in range(6):
        await app.schedule("flaky", f"f{n}")
    await app.schedule("series", "weekly", every=timedelta(milliseconds=200))
    async with running(app):
        await eventually(lambda: count_is(app, "flaky", "dead", 6), what="all dead")
        await eventually(lambda: len(ticks) >= 3, what="three occurrences")
    assert set(attempts.values()) == {2}
    dead = await app.list("flaky", "dead")
    assert sorted(t.task_id for t in dead) == [f"f{n}" for n in range(6)]
    await app.retry("flaky", "f2")
    assert (await app.get("flaky", "f2")) is not None
    assert (await app.counts("series"))["due"] == 1


async def test_the_partition_count_cannot_change_under_tasks(
    app: duetime.App, store_url: str
) -> None:
    app.declare("reports4", partitions=4)
    await app.schedule("reports4", "r1", delay=timedelta(hours=1))
    other = duetime.App(store_url, namespace=app.namespace)
    other.declare("reports4", partitions=2)
    try:
        with pytest.raises(duetime.ConfigError, match="stored in 4 partition"):
            await other.schedule("reports4", "r2")
        single = duetime.App(store_url, namespace=app.namespace)
        single.declare("reports4")
        with pytest.raises(duetime.ConfigError, match="declares 1"):
            await single.get("reports4", "r1")
        await single.close()
        await app.cancel("reports4", "r1")  # emptied: the count may change
        await other.schedule("reports4", "r2")
        assert (await other.get("reports4", "r2")) is not None
    finally:
        await other.close()
    with pytest.raises(duetime.ValidationError, match="partitions"):
        app.declare("bad", partitions=0)
    with pytest.raises(duetime.ValidationError, match="partitions"):
        app.task("bad", partitions=1000)
    assert part_name("reports4", 1) == "reports4#1"
