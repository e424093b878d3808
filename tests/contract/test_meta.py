"""A task's metadata on each store: given to schedule, submit and schedule_many, seen by the
handler and its middleware, kept by retries, occurrences, dead letters and merges; bad
metadata writes nothing; a record of before has none."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

import duetime
from duetime.middleware import CallNext
from duetime.stores.base import NewTask
from tests.helpers import eventually, has_state, record_text, running

FAST = duetime.Backoff(base=timedelta(milliseconds=20), jitter=0)


async def test_metadata_is_shown_and_kept_across_retries_and_occurrences_to_the_dead_letter(
    app: duetime.App,
) -> None:
    seen: list[tuple[str, int, dict[str, Any]]] = []
    around: list[dict[str, Any]] = []

    async def note(ctx: duetime.Context, call_next: CallNext) -> Any:
        around.append(dict(ctx.meta))
        return await call_next()

    @app.task("metered", retries=1, backoff=FAST, middleware=[note])
    async def metered(payload: dict[str, Any], ctx: duetime.Context) -> None:
        seen.append((ctx.task_id, ctx.attempt, dict(ctx.meta)))
        if ctx.task_id == "failing":
            raise ValueError("boom")

    tenant = {"tenant": "t7", "requested_by": "ana", "n": [1, {"x": None}]}
    await app.schedule("metered", "failing", meta=tenant, delay=60)
    info = await app.get("metered", "failing")
    assert info is not None and info.meta == tenant and info.payload == {}
    async with running(app):
        await app.schedule("metered", "failing", meta=tenant)  # due now
        await app.schedule("metered", "series", meta={"s": 1}, every=0.1, limit=2)
        await eventually(lambda: has_state(app, "metered", "failing", "dead"), within=25)
        await eventually(lambda: len([s for s in seen if s[0] == "series"]) == 2, within=25)

    assert [s for s in seen if s[0] == "failing"] == [
        ("failing", 1, tenant),
        ("failing", 2, tenant),
    ]
    assert [s for s in seen if s[0] == "series"] == [("series", 1, {"s": 1})] * 2
    assert len(around) == len(seen)
    dead = await app.get("metered", "failing")
    assert dead is not None and dead.meta == tenant


async def test_submit_and_schedule_many_take_it_and_a_merge_keeps_the_pending_tasks(
    app: duetime.App,
) -> None:
    task_id = await app.submit("mail", delay=60, meta={"via": "submit"})
    assert await app.schedule_many(
        [
            duetime.Task("mail", "m1", delay=timedelta(minutes=1), meta={"via": "many"}),
            duetime.Task("mail", "m2", delay=timedelta(minutes=1)),
        ]
    )
    await app.schedule("mail", "m1", payload={"more": 1}, if_exists="merge")
    shown = {i: await app.get("mail", i) for i in (task_id, "m1", "m2")}
    metas = {i: None if info is None else info.meta for i, info in shown.items()}
    assert metas == {task_id: {"via": "submit"}, "m1": {"via": "many"}, "m2": {}}
    merged = shown["m1"]
    assert merged is not None and merged.payload == {"more": 1}


@pytest.mark.parametrize(
    "meta",
    [["not", "a", "dict"], {1: "x"}, {"big": "x" * 5000}, {"f": float("inf")}],
)
async def test_bad_metadata_is_refused_and_nothing_is_written(app: duetime.App, meta: Any) -> None:
    with pytest.raises(duetime.ValidationError) as caught:
        await app.schedule("mail", "bad", meta=meta)
    assert caught.value.field == "meta"
    with pytest.raises(duetime.ValidationError):
        await app.schedule_many(
            [duetime.Task("mail", "ok"), duetime.Task("mail", "bad", meta=meta)]
        )
    assert await app.get("mail", "bad") is None and await app.get("mail", "ok") is None


async def test_a_record_written_before_metadata_loads_and_runs_without_any(
    app: duetime.App,
) -> None:
    seen: list[dict[str, Any]] = []

    @app.task("old", retries=1, backoff=FAST)
    async def old(payload: dict[str, Any], ctx: duetime.Context) -> None:
        seen.append(dict(ctx.meta))

    store = await app.open()
    now = await app.now_ms()
    await store.schedule("old", (NewTask("o1", now, record_text('{"a":1}', failures=1)),))
    info = await app.get("old", "o1")
    assert info is not None and info.meta == {} and info.payload == {"a": 1}
    async with running(app):
        await eventually(lambda: seen == [{}], within=25)
