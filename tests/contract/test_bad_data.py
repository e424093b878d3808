"""Bad data found in the store: that task alone goes to the dead letters with the reason,
every other task runs, the worker stays up, and listings still show it (every store)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest

import duetime
from duetime.stores.base import NewTask
from tests.helpers import count_is, eventually, has_state, running
from tests.hostile import Raw, RawPostgres, raw_for


@pytest.fixture
def raw(store_url: str, namespace: str) -> Iterator[Raw]:
    writer = raw_for(store_url, namespace)
    yield writer
    writer.close()


async def _run_all(app: duetime.App, good: list[str], bad: list[str], ran: list[str]) -> None:
    """Run a worker until every good task ran and every bad one is dead."""

    async def bad_ones_dead() -> bool:
        return all([await has_state(app, "work", task_id, "dead") for task_id in bad])

    async with running(app):
        await eventually(lambda: sorted(ran) == sorted(good), 10, "every good task ran")
        await eventually(bad_ones_dead, 10, "every bad task in the dead letters")
        # Settled: nothing is left to run twice (the worker stops at the block's end).
        await eventually(lambda: count_is(app, "work", "running", 0), 10, "every run settled")
    assert sorted(ran) == sorted(good)


async def test_a_record_that_is_not_utf8_goes_dead_alone_and_its_batch_runs(
    app: duetime.App, raw: Raw
) -> None:
    ran: list[str] = []

    @app.task("work", lease=3)
    async def work(payload: dict[str, Any], ctx: duetime.Context) -> None:
        ran.append(ctx.task_id)

    if isinstance(raw, RawPostgres):
        # Such a record cannot be in this store: the server checks text as it is written,
        # and refuses it, leaving the task as it was.
        await app.schedule("work", "bad_x", payload={"k": 1}, delay=60)
        with pytest.raises(psycopg.Error, match="UTF8"):
            raw.force_record("work", "bad_x", b"\xff\xfe")
        info = await app.get("work", "bad_x")
        assert info is not None and info.payload == {"k": 1}
        return
    soon = timedelta(milliseconds=300)  # all due together: one claim batch
    ids = [f"g{i}" for i in range(40)] + ["bad_x"]
    await app.schedule_many(duetime.Task("work", task_id, delay=soon) for task_id in ids)
    raw.set_record("work", "bad_x", b"\xff\xfe")

    await _run_all(app, [f"g{i}" for i in range(40)], ["bad_x"], ran)

    info = await app.get("work", "bad_x")
    assert info is not None and info.payload is None
    assert info.error is not None and "UTF-8" in info.error
    (dead,) = await app.list("work", "dead")
    assert dead.task_id == "bad_x" and dead.error == info.error


BAD_RECORDS = {
    "every zero": '{"p":{},"e":0}',
    "every negative": '{"p":{},"e":-1000}',
    "occurrence past the year 9999": '{"p":{},"o":99999999999999999999}',
    "until past the year 9999": '{"p":{},"e":1000,"u":99999999999999999999}',
    "failures negative": '{"p":{},"f":-3}',
    "cron jitter negative": '{"p":{},"c":{"x":"* * * * *","z":"UTC","j":-5},"o":0}',
}


async def test_valid_json_out_of_range_goes_dead_with_the_reason_and_frees_its_slot(
    app: duetime.App, store: duetime.stores.base.Store
) -> None:
    ran: list[str] = []

    @app.task("work", concurrency=1)
    async def work(payload: dict[str, Any], ctx: duetime.Context) -> None:
        ran.append(ctx.task_id)

    now = await app.now_ms()
    bad = [NewTask(f"bad{k}", now, text) for k, text in enumerate(BAD_RECORDS.values())]
    await store.schedule("work", bad)
    await app.schedule_many(duetime.Task("work", f"g{i}") for i in range(20))

    await _run_all(app, [f"g{i}" for i in range(20)], [t.id for t in bad], ran)

    for task, what in zip(bad, BAD_RECORDS, strict=True):
        info = await app.get("work", task.id)
        assert info is not None and info.error is not None, what
        assert info.error.startswith("corrupt record"), (what, info.error)
