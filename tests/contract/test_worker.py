"""A worker against each store: timing, retries, periodic tasks, the hook, shutdown."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import duetime
from duetime.clock import from_ms
from duetime.stores.base import NewTask
from tests.helpers import eventually, running

FAST = duetime.Backoff(base=timedelta(milliseconds=20), jitter=0)


async def test_a_task_runs_once_at_its_due_time_with_its_context(app: duetime.App) -> None:
    runs: list[tuple[int, dict[str, Any], duetime.Context]] = []

    @app.task("once")
    async def once(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs.append((app.clock.now_ms(), payload, ctx))

    async with running(app):
        due = await app.schedule(
            "once", "job-1", delay=timedelta(milliseconds=300), payload={"k": [1, {"x": None}]}
        )
        await eventually(lambda: len(runs) == 1)
        await asyncio.sleep(0.3)

    due_ms = int(due.timestamp() * 1000)
    started, payload, ctx = runs[0]
    assert len(runs) == 1
    assert due_ms <= started <= due_ms + 200  # never early; late only by scheduling noise
    assert payload == {"k": [1, {"x": None}]}
    assert (ctx.task_type, ctx.task_id, ctx.attempt, ctx.due) == ("once", "job-1", 1, due)
    assert ctx.occurrence == f"job-1@{due_ms}" and ctx.token > 0 and ctx.app is app
    assert await app.get("once", "job-1") is None


async def test_a_plain_def_handler_runs_in_a_thread(app: duetime.App) -> None:
    threads: list[str] = []

    @app.task("sync")
    def sync(payload: dict[str, Any]) -> None:
        time.sleep(0.05)  # blocking is fine here: not on the event loop
        threads.append(threading.current_thread().name)

    async with running(app):
        await app.schedule_many(duetime.Task("sync", f"s{i}") for i in range(4))
        await eventually(lambda: len(threads) == 4)

    assert all(name != threading.main_thread().name for name in threads)


async def test_a_failing_task_is_retried_with_backoff_then_dead_then_retried_by_hand(
    app: duetime.App,
) -> None:
    attempts: list[tuple[int, int]] = []
    healed = asyncio.Event()

    @app.task(
        "flaky", retries=2, backoff=duetime.Backoff(base=timedelta(milliseconds=100), jitter=0)
    )
    async def flaky(payload: dict[str, Any], ctx: duetime.Context) -> None:
        attempts.append((ctx.attempt, app.clock.now_ms()))
        if not healed.is_set():
            raise ValueError("boom")

    async with running(app):
        await app.schedule("flaky", "f1", payload={"p": 1})
        await eventually(lambda: len(attempts) == 3)
        await eventually(lambda: _state(app, "flaky", "f1", "dead"))

        info = await app.get("flaky", "f1")
        assert info is not None
        assert (info.state, info.attempts, info.error, info.payload) == (
            "dead",
            3,
            "ValueError: boom",
            {"p": 1},
        )
        assert [a for a, _ in attempts] == [1, 2, 3]
        gaps = [b - a for (_, a), (_, b) in zip(attempts, attempts[1:], strict=False)]
        assert gaps[0] >= 100 and gaps[1] >= 200  # exponential: 100 ms, then 200 ms

        healed.set()
        await app.retry("flaky", "f1")
        await eventually(lambda: len(attempts) == 4)
        await eventually(lambda: _gone(app, "flaky", "f1"))
    assert attempts[-1][0] == 1  # a revived task starts its attempts afresh


async def test_a_handler_can_ask_for_a_retry_at_a_time_or_give_up(app: duetime.App) -> None:
    seen: list[tuple[str, int, int]] = []

    @app.task("ctl", retries=3)
    async def ctl(payload: dict[str, Any], ctx: duetime.Context) -> None:
        seen.append((ctx.task_id, ctx.attempt, app.clock.now_ms()))
        if payload["mode"] == "later" and ctx.attempt == 1:
            raise duetime.Retry(after=timedelta(milliseconds=250), reason="not yet")
        if payload["mode"] == "abort":
            raise duetime.Abort("the customer is gone")

    async with running(app):
        await app.schedule("ctl", "later", payload={"mode": "later"})
        await app.schedule("ctl", "abort", payload={"mode": "abort"})
        await eventually(lambda: len([s for s in seen if s[0] == "later"]) == 2)
        await eventually(lambda: _state(app, "ctl", "abort", "dead"))
        aborted = await app.get("ctl", "abort")

    later = [s for s in seen if s[0] == "later"]
    assert later[1][1] == 2 and later[1][2] - later[0][2] >= 250
    assert [s for s in seen if s[0] == "abort"] == [seen[[s[0] for s in seen].index("abort")]]
    assert aborted is not None and aborted.error == "the customer is gone"


async def test_a_periodic_task_runs_every_period_without_drift_until_its_end(
    app: duetime.App,
) -> None:
    dues: list[datetime] = []

    @app.task("tick")
    async def tick(payload: dict[str, Any], ctx: duetime.Context) -> None:
        dues.append(ctx.due)
        await asyncio.sleep(0.03)  # a run that takes time must not shift the next one

    start = from_ms(await app.now_ms() + 200)
    async with running(app):
        await app.schedule(
            "tick",
            "t",
            at=start,
            every=timedelta(milliseconds=150),
            until=start + timedelta(milliseconds=460),
        )
        await eventually(lambda: _gone(app, "tick", "t"), within=5)

    assert dues == [start + timedelta(milliseconds=150 * n) for n in range(4)]


async def test_the_reschedule_hook_deep_merges_changes_and_can_end_the_series(
    app: duetime.App,
) -> None:
    payloads: list[dict[str, Any]] = []

    @app.task("series")
    async def series(payload: dict[str, Any]) -> None:
        payloads.append(payload)
        payload["mutated"] = True  # the handler's copy; must not leak into the next one

    @series.reschedule
    async def check(payload: dict[str, Any], ctx: duetime.Context) -> Any:
        if payload["cfg"]["round"] >= 3:
            return False
        return duetime.Reschedule(
            payload={
                "cfg": {"round": payload["cfg"]["round"] + 1},
                "tags": ["r" + str(payload["cfg"]["round"])],
            }
        )

    async with running(app):
        await app.schedule(
            "series",
            "s",
            every=timedelta(milliseconds=50),
            payload={"cfg": {"round": 1, "keep": "me"}, "tags": ["a", "b"]},
        )
        await eventually(lambda: _gone(app, "series", "s"))

    assert [p["cfg"] for p in payloads] == [{"round": n, "keep": "me"} for n in (1, 2, 3)]
    assert [p["tags"] for p in payloads] == [["a", "b"], ["r1"], ["r2"]]


async def test_a_failing_hook_does_not_end_the_series(app: duetime.App) -> None:
    runs: list[int] = []

    @app.task("hooked")
    async def hooked(payload: dict[str, Any]) -> None:
        runs.append(1)

    @hooked.reschedule
    def broken(payload: dict[str, Any]) -> Any:
        raise RuntimeError("hook bug")

    async with running(app):
        await app.schedule("hooked", "h", every=timedelta(milliseconds=50))
        await eventually(lambda: len(runs) >= 3)
    info = await app.get("hooked", "h")
    assert info is not None and info.state == "due"


async def test_a_failed_occurrence_is_dead_lettered_and_the_series_goes_on(
    app: duetime.App,
) -> None:
    runs: list[datetime] = []

    @app.task("report", retries=0)
    async def report(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs.append(ctx.due)
        if len(runs) == 1:
            raise RuntimeError("first occurrence fails")

    async with running(app):
        await app.schedule("report", "daily", every=timedelta(milliseconds=100))
        await eventually(lambda: len(runs) >= 3)
        dead = await app.list("report", "dead")

    first_ms = int(runs[0].timestamp() * 1000)
    assert [d.task_id for d in dead] == [f"daily@{first_ms}"]
    assert dead[0].error == "RuntimeError: first occurrence fails"
    assert runs[1] - runs[0] == timedelta(milliseconds=100)


async def test_a_retry_and_a_dead_letter_keep_the_payload_as_scheduled(
    app: duetime.App,
) -> None:
    seen: list[dict[str, Any]] = []

    @app.task("mutating", retries=1, backoff=FAST)
    async def mutating(payload: dict[str, Any]) -> None:
        seen.append(json.loads(json.dumps(payload)))
        payload["items"].append("x")  # the handler's own copy
        payload["count"] = len(seen)
        raise RuntimeError("fails after changing its payload")

    async with running(app):
        await app.schedule("mutating", "m", payload={"items": []})
        await eventually(lambda: _state(app, "mutating", "m", "dead"))

    assert seen == [{"items": []}, {"items": []}]
    dead = await app.get("mutating", "m")
    assert dead is not None and dead.payload == {"items": []} and dead.attempts == 2


async def test_a_series_retry_sees_the_payload_the_last_reschedule_left(
    app: duetime.App,
) -> None:
    seen: list[dict[str, Any]] = []

    @app.task("growing", retries=1, backoff=FAST)
    async def growing(payload: dict[str, Any], ctx: duetime.Context) -> None:
        seen.append(json.loads(json.dumps(payload)))
        payload["round"] = -1
        if len(seen) == 2:
            raise RuntimeError("the second occurrence fails once")

    @growing.reschedule
    def next_round(payload: dict[str, Any]) -> duetime.Reschedule | bool:
        return duetime.Reschedule(payload={"round": payload["round"] + 1})

    async with running(app):
        await app.schedule("growing", "g", every=timedelta(milliseconds=100), payload={"round": 1})
        await eventually(lambda: len(seen) >= 4)
        await app.cancel("growing", "g")

    assert seen[:4] == [{"round": 1}, {"round": 2}, {"round": 2}, {"round": 3}]


async def test_a_hung_handler_times_out_and_is_retried(app: duetime.App) -> None:
    starts: list[int] = []

    @app.task("hang", timeout=0.2, retries=1, backoff=FAST)
    async def hang(payload: dict[str, Any], ctx: duetime.Context) -> None:
        starts.append(ctx.attempt)
        await asyncio.sleep(30)

    async with running(app):
        await app.schedule("hang", "h")
        await eventually(lambda: _state(app, "hang", "h", "dead"), within=5)
        info = await app.get("hang", "h")

    assert starts == [1, 2]
    assert info is not None and info.error is not None and "timed out" in info.error


async def test_a_running_worker_stops_and_starts_one_type(app: duetime.App) -> None:
    ran: list[str] = []

    @app.task("a")
    async def a(payload: dict[str, Any]) -> None:
        ran.append("a")

    @app.task("b")
    async def b(payload: dict[str, Any]) -> None:
        ran.append("b")

    async with running(app) as worker:
        worker.stop_scheduled_tasks("a")
        await app.schedule("a", "1")
        await app.schedule("b", "1")
        await eventually(lambda: ran == ["b"])
        await asyncio.sleep(0.3)
        assert ran == ["b"]
        worker.start_scheduled_tasks("a")
        await eventually(lambda: ran == ["b", "a"])
        with pytest.raises(duetime.UnknownTaskType):
            worker.pause("c")


async def test_an_idle_worker_is_woken_by_an_earlier_task(app: duetime.App) -> None:
    ran: list[tuple[str, int]] = []

    @app.task("wake", pacing=duetime.Pacing(max_idle=timedelta(seconds=30)))
    async def wake(payload: dict[str, Any], ctx: duetime.Context) -> None:
        ran.append((ctx.task_id, app.clock.now_ms()))

    async with running(app):
        await app.schedule("wake", "far", delay=timedelta(seconds=20))
        await asyncio.sleep(0.2)  # the worker now sleeps until "far", 20 s away
        due = await app.schedule("wake", "near", delay=timedelta(milliseconds=150))
        await eventually(lambda: len(ran) == 1, within=3)

    due_ms = int(due.timestamp() * 1000)
    assert ran[0][0] == "near" and due_ms <= ran[0][1] <= due_ms + 150


async def test_the_concurrency_limit_holds(app: duetime.App) -> None:
    now = 0
    peak = 0
    done: list[int] = []

    @app.task("limited", concurrency=2)
    async def limited(payload: dict[str, Any]) -> None:
        nonlocal now, peak
        now += 1
        peak = max(peak, now)
        await asyncio.sleep(0.05)
        now -= 1
        done.append(1)

    async with running(app):
        await app.schedule_many(duetime.Task("limited", f"l{i}") for i in range(8))
        await eventually(lambda: len(done) == 8)
    assert peak == 2


async def test_a_long_handler_keeps_its_lease_by_renewing_it(app: duetime.App) -> None:
    runs: list[int] = []

    @app.task("long", lease=0.3, timeout=None)
    async def long(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs.append(ctx.token)
        await asyncio.sleep(1.0)

    async with running(app):
        await app.schedule("long", "l")
        await eventually(lambda: _gone(app, "long", "l"), within=5)
    assert len(runs) == 1


async def test_stop_lets_running_handlers_finish(app: duetime.App) -> None:
    finished: list[str] = []
    started = asyncio.Event()

    @app.task("slow")
    async def slow(payload: dict[str, Any]) -> None:
        started.set()
        await asyncio.sleep(0.3)
        finished.append("slow")

    worker = app.worker(grace=5)
    task = asyncio.create_task(worker.run())
    await app.schedule("slow", "s")
    await asyncio.wait_for(started.wait(), 5)
    worker.stop()
    await asyncio.wait_for(task, 5)

    assert finished == ["slow"]
    assert await app.get("slow", "s") is None


async def test_a_handler_past_the_grace_period_is_cut_short_and_handed_back(
    app: duetime.App,
) -> None:
    started = asyncio.Event()

    @app.task("stuck", timeout=None)
    async def stuck(payload: dict[str, Any]) -> None:
        started.set()
        await asyncio.sleep(60)

    worker = app.worker(grace=0.2)
    task = asyncio.create_task(worker.run())
    due = await app.schedule("stuck", "s")
    await asyncio.wait_for(started.wait(), 5)
    t0 = time.monotonic()
    worker.stop()
    await asyncio.wait_for(task, 5)

    assert time.monotonic() - t0 < 2
    info = await app.get("stuck", "s")
    assert info is not None and (info.state, info.due, info.attempts) == ("due", due, 0)


async def test_a_corrupt_record_goes_to_the_dead_letters_and_the_rest_runs(
    app: duetime.App,
) -> None:
    ran: list[str] = []

    @app.task("mixed")
    async def mixed(payload: dict[str, Any], ctx: duetime.Context) -> None:
        ran.append(ctx.task_id)

    store = await app.open()
    now = await app.now_ms()
    await store.schedule(
        "mixed", [NewTask("bad", now, "{not json"), NewTask("list", now, '{"p": [1]}')]
    )
    await app.schedule("mixed", "good")

    async with running(app):
        await eventually(lambda: ran == ["good"])
        await eventually(lambda: _state(app, "mixed", "list", "dead"))
        bad = await app.get("mixed", "bad")
        as_list = await app.get("mixed", "list")

    assert bad is not None and bad.state == "dead"
    assert bad.error is not None and "corrupt record" in bad.error
    assert as_list is not None and as_list.error is not None and "corrupt" in as_list.error


async def test_a_task_cancelled_while_running_is_not_rescheduled(app: duetime.App) -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    @app.task("periodic")
    async def periodic(payload: dict[str, Any]) -> None:
        started.set()
        await release.wait()

    async with running(app):
        await app.schedule("periodic", "p", every=timedelta(milliseconds=50))
        await asyncio.wait_for(started.wait(), 5)
        assert await app.cancel("periodic", "p") is True
        release.set()
        await eventually(lambda: _count(app, "periodic", "running", 0))
        await asyncio.sleep(0.2)
    assert await app.get("periodic", "p") is None


@pytest.mark.parametrize("delivery", ["at_least_once", "at_most_once"])
async def test_delivery_modes_both_run_a_task(app: duetime.App, delivery: str) -> None:
    ran: list[int] = []

    @app.task("d", delivery=delivery)  # type: ignore[arg-type]
    async def d(payload: dict[str, Any]) -> None:
        ran.append(1)

    async with running(app):
        await app.schedule("d", "x")
        await eventually(lambda: ran == [1])


async def _state(app: duetime.App, task_type: str, task_id: str, state: str) -> bool:
    info = await app.get(task_type, task_id)
    return info is not None and info.state == state


async def _gone(app: duetime.App, task_type: str, task_id: str) -> bool:
    return await app.get(task_type, task_id) is None


async def _count(app: duetime.App, task_type: str, state: str, n: int) -> bool:
    return (await app.counts(task_type))[state] == n  # type: ignore[index]


def test_datetimes_in_contexts_are_aware_utc() -> None:
    assert from_ms(0) == datetime(1970, 1, 1, tzinfo=UTC)


async def test_a_store_set_up_to_keep_tasks_reports_no_settings_problem(
    store: duetime.stores.base.Store,  # type: ignore[name-defined]
) -> None:
    assert await store.check_settings() == []
