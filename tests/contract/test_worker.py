"""A worker against each store: timing, retries, periodic tasks, the hook, shutdown."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import duetime
from duetime.clock import from_ms
from duetime.stores.base import NewTask
from duetime.testing import harness
from tests.helpers import ClaimSpy, count_is, eventually, has_state, is_gone, running

FAST = duetime.Backoff(base=timedelta(milliseconds=20), jitter=0)


async def test_a_task_runs_once_at_its_due_time_with_its_context(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    runs: list[tuple[int, dict[str, Any], duetime.Context]] = []

    @app.task("once")
    async def once(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs.append((app.clock.now_ms(), payload, ctx))

    async with harness(app, url=store_url) as h:
        due = await app.schedule(
            "once", "job-1", delay=timedelta(milliseconds=300), payload={"k": [1, {"x": None}]}
        )
        h.advance(0.299)
        assert await h.run_due() == []  # never early
        h.advance(0.001)
        await h.run_due()
        h.advance(3600)
        await h.run_due()
        assert await app.get("once", "job-1") is None

    due_ms = int(due.timestamp() * 1000)
    assert len(runs) == 1
    started, payload, ctx = runs[0]
    assert started == due_ms
    assert payload == {"k": [1, {"x": None}]}
    assert (ctx.task_type, ctx.task_id, ctx.attempt, ctx.due) == ("once", "job-1", 1, due)
    assert ctx.occurrence == f"job-1@{due_ms}" and ctx.token > 0 and ctx.app is app


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


async def test_a_running_worker_stops_and_starts_one_type(app: duetime.App) -> None:
    ran: list[str] = []

    @app.task("a")
    async def a(payload: dict[str, Any]) -> None:
        ran.append("a")

    @app.task("b")
    async def b(payload: dict[str, Any]) -> None:
        ran.append("b")

    # Paused before it starts: a claim already in flight when pause() is called may still
    # bring a task, which then runs (pause stops claiming, not what was claimed).
    claims = ClaimSpy(await app.open())
    async with running(app, paused=["a"]) as worker:
        await app.schedule("a", "1")
        await app.schedule("b", "1")
        await eventually(lambda: ran == ["b"])
        assert ran == ["b"] and claims.mark("a") == ("a", 0)  # "a" was never claimed
        worker.start_scheduled_tasks("a")
        await eventually(lambda: ran == ["b", "a"])
        with pytest.raises(duetime.UnknownTaskType):
            worker.pause("c")


async def test_an_idle_worker_is_woken_by_an_earlier_task(app: duetime.App) -> None:
    ran: list[tuple[str, int]] = []

    # Asleep on an hour (its poll interval, and the far task): only a wake-up runs "near".
    @app.task("wake", pacing=duetime.Pacing(max_idle=timedelta(hours=1)))
    async def wake(payload: dict[str, Any], ctx: duetime.Context) -> None:
        ran.append((ctx.task_id, app.clock.now_ms()))

    claims = ClaimSpy(await app.open())
    async with running(app):
        mark = claims.mark("wake")
        await app.schedule("wake", "far", delay=timedelta(hours=1))
        await claims.since(mark)  # the worker now sleeps until "far", an hour away
        due = await app.schedule("wake", "near", delay=timedelta(milliseconds=150))
        await eventually(lambda: len(ran) == 1, within=25, what="the near task runs")

    due_ms = int(due.timestamp() * 1000)
    assert ran[0][0] == "near" and ran[0][1] >= due_ms  # never early


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

    # A handler that outlives its lease three times over, renewed every third of it (a lease
    # of 0.3 s lost a renewal on a loaded Cluster).
    @app.task("long", lease=0.6, timeout=None)
    async def long(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs.append(ctx.token)
        await asyncio.sleep(1.8)

    async with running(app):
        await app.schedule("long", "l")
        await eventually(lambda: is_gone(app, "long", "l"), within=5)
    assert len(runs) == 1


async def test_stop_lets_running_handlers_finish(app: duetime.App) -> None:
    finished: list[str] = []
    started = asyncio.Event()

    @app.task("slow")
    async def slow(payload: dict[str, Any]) -> None:
        started.set()
        await asyncio.sleep(0.3)
        finished.append("slow")

    async with running(app, grace=5):
        await app.schedule("slow", "s")
        await asyncio.wait_for(started.wait(), 5)

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

    # The handler would sleep a minute: `running` gives the stop 30 s, so the stop ending at
    # all says that the handler was cut short.
    async with running(app, grace=0.2):
        due = await app.schedule("stuck", "s")
        await asyncio.wait_for(started.wait(), 25)

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
        await eventually(lambda: has_state(app, "mixed", "list", "dead"))
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
        await eventually(lambda: count_is(app, "periodic", "running", 0))
    # Settled (the one moment it could have been scheduled again), and the worker stopped.
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


def test_datetimes_in_contexts_are_aware_utc() -> None:
    assert from_ms(0) == datetime(1970, 1, 1, tzinfo=UTC)


async def test_a_store_set_up_to_keep_tasks_reports_no_settings_problem(
    store: duetime.stores.base.Store,
) -> None:
    assert await store.check_settings() == []
