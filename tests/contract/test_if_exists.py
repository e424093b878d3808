"""``if_exists`` (replace, keep, merge) and ``unique_for`` on one and on many tasks, on every
store: what a second schedule of an id does to a pending task, and to one that finished."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import duetime
from duetime.stores.base import NewTask, Store
from duetime.testing import harness
from tests.helpers import count_is, eventually, has_state, is_gone, running

AT = datetime(2031, 5, 4, 9, 30, tzinfo=UTC)


# -- keep -----------------------------------------------------------------------------------


async def test_keep_leaves_a_pending_task_as_it_is_and_returns_its_due_time(
    app: duetime.App,
) -> None:
    await app.schedule("mail", "m1", at=AT, payload={"v": 1})

    due = await app.schedule(
        "mail", "m1", at=AT + timedelta(days=1), payload={"v": 2}, if_exists="keep"
    )

    assert due == AT
    info = await app.get("mail", "m1")
    assert info is not None and (info.due, info.payload) == (AT, {"v": 1})


async def test_keep_writes_a_task_whose_id_is_free_or_dead(app: duetime.App) -> None:
    fresh = await app.schedule("mail", "new", at=AT, payload={"v": 1}, if_exists="keep")
    assert fresh == AT

    @app.task("doomed", retries=0)
    async def doomed(payload: dict[str, Any], ctx: duetime.Context) -> None:
        raise RuntimeError("no")

    await app.schedule("doomed", "d1")
    async with running(app):
        await eventually(lambda: has_state(app, "doomed", "d1", "dead"), what="d1 dead")
    again = await app.schedule("doomed", "d1", at=AT, payload={"v": 2}, if_exists="keep")

    assert again == AT
    info = await app.get("doomed", "d1")
    assert info is not None and (info.state, info.payload, info.error) == ("due", {"v": 2}, None)


async def test_keep_counts_a_running_task_as_pending(app: duetime.App) -> None:
    release = asyncio.Event()
    runs: list[dict[str, Any]] = []

    @app.task("slow")
    async def slow(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs.append(payload)
        await release.wait()

    due = await app.schedule("slow", "s1", payload={"v": 1})
    async with running(app):
        await eventually(lambda: len(runs) == 1, what="s1 started")
        kept = await app.schedule("slow", "s1", payload={"v": 2}, if_exists="keep")
        assert kept == due  # when its run was due
        release.set()
        # Gone from the store: nothing is left that could run again (a kept second run
        # would be due, not gone).
        await eventually(lambda: is_gone(app, "slow", "s1"), what="s1 done")
    assert runs == [{"v": 1}]


# -- merge ----------------------------------------------------------------------------------


async def test_merge_deep_merges_into_the_pending_payload_and_keeps_its_due_time(
    app: duetime.App,
) -> None:
    first = {"to": "a@b.c", "vars": {"name": "Ann", "tags": [1, 2]}, "n": 1}
    await app.schedule("mail", "m1", at=AT, payload=first)

    changes = {"vars": {"tags": [3], "city": "Oslo"}, "n": 2, "__proto__": {"x": 1}}
    due = await app.schedule("mail", "m1", payload=changes, if_exists="merge")

    assert due == AT
    info = await app.get("mail", "m1")
    assert info is not None and info.due == AT
    assert info.payload == {
        "to": "a@b.c",
        "vars": {"name": "Ann", "tags": [3], "city": "Oslo"},
        "n": 2,
    }
    assert (await app.counts("mail"))["due"] == 1


async def test_merge_moves_the_task_when_at_or_delay_is_given(app: duetime.App) -> None:
    await app.schedule("mail", "m1", at=AT, payload={"a": 1})
    later = AT + timedelta(hours=2)

    assert await app.schedule("mail", "m1", at=later, payload={"b": 2}, if_exists="merge") == later

    info = await app.get("mail", "m1")
    assert info is not None and (info.due, info.payload) == (later, {"a": 1, "b": 2})


async def test_merge_writes_the_payload_as_given_when_nothing_is_pending(
    app: duetime.App,
) -> None:
    due = await app.schedule(
        "mail", "m1", at=AT, payload={"a": 1}, every=timedelta(days=1), if_exists="merge"
    )

    assert due == AT
    info = await app.get("mail", "m1")
    assert info is not None and (info.payload, info.every) == ({"a": 1}, timedelta(days=1))


async def test_merge_into_a_waiting_series_keeps_it_a_series(app: duetime.App) -> None:
    until = AT + timedelta(weeks=4)
    await app.schedule(
        "mail", "weekly", at=AT, every=timedelta(days=7), until=until, payload={"a": 1}
    )

    await app.schedule("mail", "weekly", payload={"b": 2}, if_exists="merge")

    info = await app.get("mail", "weekly")
    assert info is not None
    assert (info.due, info.every, info.until, info.payload) == (
        AT,
        timedelta(days=7),
        until,
        {"a": 1, "b": 2},
    )


async def test_a_merge_into_a_running_task_runs_after_it_with_the_merged_payload(
    app: duetime.App,
) -> None:
    """The run goes on with its own payload; its end does not undo the merge, which runs
    as a new occurrence after it."""
    release = asyncio.Event()
    runs: list[dict[str, Any]] = []

    @app.task("slow")
    async def slow(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs.append(payload)
        if len(runs) == 1:
            await release.wait()

    await app.schedule("slow", "s1", payload={"a": 1, "nested": {"x": 1}})
    async with running(app):
        await eventually(lambda: len(runs) == 1, what="s1 started")
        await app.schedule("slow", "s1", payload={"nested": {"y": 2}}, if_exists="merge", delay=0.3)
        release.set()
        await eventually(lambda: len(runs) == 2, what="the merged occurrence ran")
        await eventually(lambda: is_gone(app, "slow", "s1"), what="s1 done")
    assert runs == [{"a": 1, "nested": {"x": 1}}, {"a": 1, "nested": {"x": 1, "y": 2}}]


async def test_the_store_writes_a_merge_only_over_the_task_it_was_made_from(
    app: duetime.App, store: Store
) -> None:
    """The compare-and-set under a merge: a record made from a pending task that has
    changed since is not written, and the store answers with the task pending now."""
    from duetime.stores.capabilities import CONDITIONAL, use
    from duetime.stores.conditional import Answer, Condition

    conditional = use(store, CONDITIONAL)
    await app.schedule("mail", "m1", at=AT, payload={"v": 1})
    due, now = int(AT.timestamp() * 1000), await app.now_ms()
    stale = Condition(
        NewTask("m1", due + 5, '{"p":{"v":9}}'), "merge", 0, "waits", '{"p":{"v":0}}', True
    )

    (answer,) = await conditional.schedule_if("mail", [stale], now)

    assert (answer.verdict, answer.pending, answer.record) == ("changed", "waits", '{"p":{"v":1}}')
    info = await app.get("mail", "m1")
    assert info is not None and (info.due, info.payload) == (AT, {"v": 1})
    made_from_it = stale._replace(expected=answer.record)
    assert await conditional.schedule_if("mail", [made_from_it], now) == [Answer("written", due)]
    info = await app.get("mail", "m1")
    assert info is not None and (info.due, info.payload) == (AT, {"v": 9})
    missing = stale._replace(task=stale.task._replace(id="m2"))
    assert await conditional.schedule_if("mail", [missing], now) == [
        Answer("changed", None, "none", "")
    ]
    assert await app.get("mail", "m2") is None


async def test_two_producers_merging_into_one_task_at_once_lose_nothing(
    app: duetime.App, store_url: str
) -> None:
    other = duetime.App(store_url, namespace=app.namespace)
    other.declare("mail")
    await app.schedule("mail", "m1", at=AT, payload={"start": True})

    async def merge(producer: duetime.App, prefix: str) -> None:
        for n in range(25):
            await producer.schedule("mail", "m1", payload={prefix: {str(n): n}}, if_exists="merge")

    try:
        await asyncio.gather(merge(app, "a"), merge(other, "b"))
    finally:
        await other.close()

    info = await app.get("mail", "m1")
    assert info is not None and info.due == AT
    assert info.payload == {
        "start": True,
        "a": {str(n): n for n in range(25)},
        "b": {str(n): n for n in range(25)},
    }


async def test_merges_while_a_worker_runs_the_task_again_and_again_lose_nothing(
    app: duetime.App,
) -> None:
    """A series runs every 100 ms on a worker while a producer merges into it: each merge
    meets the task waiting, running, or being settled, and none is lost. (A series that
    changes faster than a merge's read and write, a round trip each, can make a merge give
    up after MERGE_TRIES sends: at 20 ms, PostgreSQL and Sentinel on a loaded machine did.)"""
    seen: list[dict[str, Any]] = []

    @app.task("tick")
    async def tick(payload: dict[str, Any], ctx: duetime.Context) -> None:
        seen.append(payload)

    await app.schedule("tick", "t1", every=timedelta(milliseconds=100), payload={"n": {}})
    async with running(app):
        await eventually(lambda: len(seen) >= 2, what="the series runs")
        for n in range(40):
            await app.schedule("tick", "t1", payload={"n": {str(n): n}}, if_exists="merge")
            await asyncio.sleep(0.005)
        await eventually(lambda: len(seen) >= 5 and len(seen[-1]["n"]) == 40, what="all merged")
    info = await app.get("tick", "t1")
    assert info is not None and info.payload == {"n": {str(n): n for n in range(40)}}
    assert info.every == timedelta(milliseconds=100)


# -- unique_for -----------------------------------------------------------------------------


async def test_unique_for_writes_nothing_while_the_task_finished_within_the_window(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    runs: list[str] = []

    @app.task("digest")
    async def digest(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs.append(ctx.task_id)

    window = timedelta(seconds=2)
    async with harness(app, url=store_url) as h:
        first = await app.schedule("digest", "u42", unique_for=window)
        assert first is not None
        info = await app.get("digest", "u42")
        assert info is not None and info.unique_for == window
        await h.run_due()  # it runs and finishes now
        assert await app.schedule("digest", "u42", unique_for=window) is None
        assert await app.get("digest", "u42") is None
        h.advance(window - timedelta(milliseconds=1))
        assert await app.schedule("digest", "u42", unique_for=window) is None  # 1 ms left
        h.advance(timedelta(milliseconds=1))
        again = await app.schedule("digest", "u42", unique_for=window, delay=60)
        assert again is not None and await has_state(app, "digest", "u42", "due")
    assert runs == ["u42"]


async def test_unique_for_counts_a_dead_task_as_finished(app: duetime.App) -> None:
    @app.task(
        "doomed", retries=1, backoff=duetime.Backoff(base=timedelta(milliseconds=10), jitter=0)
    )
    async def doomed(payload: dict[str, Any], ctx: duetime.Context) -> None:
        raise RuntimeError("no")

    await app.schedule("doomed", "d1", unique_for=timedelta(hours=1))
    async with running(app):
        await eventually(lambda: has_state(app, "doomed", "d1", "dead"), what="d1 dead")

    assert await app.schedule("doomed", "d1", unique_for=timedelta(hours=1)) is None
    info = await app.get("doomed", "d1")
    assert info is not None and info.state == "dead"


async def test_unique_for_remembers_only_runs_scheduled_with_it(app: duetime.App) -> None:
    @app.task("digest")
    async def digest(payload: dict[str, Any], ctx: duetime.Context) -> None:
        pass

    await app.schedule("digest", "plain")
    async with running(app):
        await eventually(lambda: is_gone(app, "digest", "plain"), what="plain done")

    assert await app.schedule("digest", "plain", at=AT, unique_for=timedelta(hours=1)) == AT


async def test_unique_for_lets_a_pending_task_be_replaced_or_kept(app: duetime.App) -> None:
    await app.schedule("mail", "m1", at=AT, payload={"v": 1}, unique_for=timedelta(hours=1))
    later = AT + timedelta(hours=1)

    kept = await app.schedule(
        "mail", "m1", at=later, unique_for=timedelta(hours=1), if_exists="keep"
    )
    moved = await app.schedule(
        "mail", "m1", at=later, payload={"v": 2}, unique_for=timedelta(hours=1)
    )

    assert (kept, moved) == (AT, later)
    info = await app.get("mail", "m1")
    assert info is not None and (info.due, info.payload) == (later, {"v": 2})


# -- many tasks -----------------------------------------------------------------------------


async def test_schedule_many_counts_what_it_wrote_and_applies_one_ids_tasks_in_order(
    app: duetime.App,
) -> None:
    await app.schedule("mail", "kept", at=AT, payload={"v": 0})
    await app.schedule("mail", "merged", at=AT, payload={"a": 1})
    tasks = [
        duetime.Task("mail", "kept", at=AT + timedelta(hours=1), if_exists="keep"),
        duetime.Task("mail", "merged", payload={"b": 2}, if_exists="merge"),
        duetime.Task("mail", "merged", payload={"c": 3}, if_exists="merge"),
        duetime.Task("mail", "fresh", at=AT, payload={"v": 1}, if_exists="keep"),
        duetime.Task("mail", "plain", at=AT),
        duetime.Task("report", "r1", at=AT),
    ]
    tasks += [duetime.Task("mail", f"k{n}", at=AT, if_exists="keep") for n in range(1500)]

    assert await app.schedule_many(tasks) == 2 + 1 + 1 + 1 + 1500  # not "kept"

    kept, merged = await app.get("mail", "kept"), await app.get("mail", "merged")
    assert kept is not None and (kept.due, kept.payload) == (AT, {"v": 0})
    assert merged is not None and (merged.due, merged.payload) == (AT, {"a": 1, "b": 2, "c": 3})
    assert (await app.counts("mail"))["due"] == 1504
    again = [duetime.Task("mail", f"k{n}", at=AT, if_exists="keep") for n in range(1500)]
    assert await app.schedule_many(again) == 0


async def test_schedule_many_skips_tasks_that_finished_within_their_window(
    app: duetime.App,
) -> None:
    @app.task("digest")
    async def digest(payload: dict[str, Any], ctx: duetime.Context) -> None:
        pass

    hour = timedelta(hours=1)
    assert (
        await app.schedule_many(
            [duetime.Task("digest", f"u{n}", unique_for=hour) for n in range(5)]
        )
        == 5
    )
    async with running(app):
        await eventually(lambda: count_is(app, "digest", "due", 0), what="all ran")
        await eventually(lambda: count_is(app, "digest", "running", 0), what="all done")

    tasks = [duetime.Task("digest", f"u{n}", at=AT, unique_for=hour) for n in range(8)]
    assert await app.schedule_many(tasks) == 3
    assert [t.task_id for t in await app.list("digest")] == ["u5", "u6", "u7"]


# -- bad values -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"if_exists": "sometimes"}, "if_exists"),
        ({"if_exists": None}, "if_exists"),
        ({"unique_for": timedelta(0)}, "unique_for"),
        ({"unique_for": -5}, "unique_for"),
        ({"unique_for": "1h"}, "unique_for"),
    ],
)
async def test_bad_values_are_refused_naming_the_field_and_nothing_is_written(
    app: duetime.App, options: dict[str, Any], field: str
) -> None:
    with pytest.raises(duetime.ValidationError) as caught:
        await app.schedule("mail", "m1", at=AT, **options)
    assert caught.value.field == field

    tasks = [duetime.Task("mail", "ok", at=AT), duetime.Task("mail", "m2", at=AT, **options)]
    with pytest.raises(duetime.ValidationError) as caught:
        await app.schedule_many(tasks)
    assert caught.value.field == f"tasks[1].{field}"
    assert (await app.counts("mail"))["due"] == 0


# -- partitions -----------------------------------------------------------------------------


async def test_if_exists_and_unique_for_hold_per_id_in_a_partitioned_type(
    app: duetime.App,
) -> None:
    @app.task("spread", partitions=4)
    async def spread(payload: dict[str, Any], ctx: duetime.Context) -> None:
        pass

    ids = [f"user-{n}" for n in range(12)]
    hour = timedelta(hours=1)
    await app.schedule_many([duetime.Task("spread", i, at=AT, payload={"a": 1}) for i in ids])
    tasks = [duetime.Task("spread", i, payload={"b": 2}, if_exists="merge") for i in ids]
    tasks += [duetime.Task("spread", i, payload={"c": 3}, if_exists="keep") for i in ids]
    assert await app.schedule_many(tasks) == 12
    for i in ids:
        info = await app.get("spread", i)
        assert info is not None and (info.due, info.payload) == (AT, {"a": 1, "b": 2})

    await app.schedule_many([duetime.Task("spread", i, unique_for=hour) for i in ids])
    async with running(app):
        await eventually(lambda: count_is(app, "spread", "due", 0), what="all ran")
        await eventually(lambda: count_is(app, "spread", "running", 0), what="all done")
    assert await app.schedule_many([duetime.Task("spread", i, unique_for=hour) for i in ids]) == 0
    assert await app.schedule("spread", "user-3", unique_for=hour) is None
