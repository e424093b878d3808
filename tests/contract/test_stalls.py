"""A task whose runs kill their workers: after ``max_stalls`` expired leases the next worker
to claim it does not run it again. A one-off task goes to the dead letters; a series files
the occurrence (``<id>@<ms>``) and goes on to the next one, as after any failure that used
up its retries, instead of stopping whole."""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta
from typing import Any

import duetime
from duetime.worker.runner import STORE_MAX_STALLS
from tests.helpers import eventually, running

QUICK = duetime.Pacing(max_idle=timedelta(milliseconds=100))
HOUR = timedelta(hours=1)
STALLED = re.compile(r"stalled: its lease expired [2-9] times")


async def _die_holding(app: duetime.App, task_type: str, ids: set[str], times: int) -> None:
    """``times`` workers claim the tasks and die holding them (their leases, 200 ms, lapse)."""
    store = await app.open()
    for _ in range(times):
        batch = await store.claim(
            task_type,
            now_ms=app.clock.now_ms(),
            limit=10,
            lease_ms=200,
            max_stalls=STORE_MAX_STALLS,
            at_most_once=False,
        )
        assert {c.id for c in batch.claims} == ids
        await asyncio.sleep(0.3)


async def test_a_series_that_kills_its_workers_files_the_occurrence_and_goes_on(
    app: duetime.App,
) -> None:
    ran: list[str] = []

    @app.task("poisoned", lease=1.0, max_stalls=1, pacing=QUICK)
    async def poisoned(payload: dict[str, Any], ctx: duetime.Context) -> None:
        ran.append(ctx.task_id)

    first = await app.schedule("poisoned", "series", every=HOUR)
    await app.schedule("poisoned", "once")
    # max_stalls=1: the second expired lease is one too many.
    await _die_holding(app, "poisoned", {"series", "once"}, 2)
    async with running(app):
        await eventually(
            lambda: _dead_count(app, "poisoned", 2), 10, "both filed by the next worker"
        )
    assert ran == []  # not run again
    dead = {d.task_id: d for d in await app.list("poisoned", "dead")}
    filed = f"series@{int(first.timestamp() * 1000)}"
    assert set(dead) == {"once", filed}
    # Two expired leases (more if a loaded machine let the filing worker's lease lapse too).
    assert all(STALLED.fullmatch(d.error or "") for d in dead.values()), dead
    # The series goes on: its next occurrence waits, an hour after the one filed.
    series = await app.get("poisoned", "series")
    assert series is not None and series.state == "due" and series.due == first + HOUR


async def test_a_stall_under_max_stalls_runs_the_task_again(app: duetime.App) -> None:
    ran: list[int] = []

    @app.task("shaky", lease=1.0, max_stalls=1, pacing=QUICK)
    async def shaky(payload: dict[str, Any], ctx: duetime.Context) -> None:
        ran.append(ctx.attempt)

    await app.schedule("shaky", "s")
    await _die_holding(app, "shaky", {"s"}, 1)
    async with running(app):
        await eventually(lambda: ran == [2], 10, "the second attempt ran")
    assert await app.get("shaky", "s") is None


async def _dead_count(app: duetime.App, task_type: str, n: int) -> bool:
    return (await app.counts(task_type))["dead"] == n


async def test_a_cron_tick_that_kills_its_workers_is_filed_and_the_schedule_goes_on(
    app: duetime.App,
) -> None:
    ran: list[str] = []

    @app.task("ticker", lease=1.0, max_stalls=1, pacing=QUICK)
    async def ticker(payload: dict[str, Any], ctx: duetime.Context) -> None:
        ran.append(ctx.occurrence)

    await app.add_cron("hourly", "0 * * * *", task="ticker", immediately=True)
    await _die_holding(app, "ticker", {"hourly"}, 2)
    async with running(app):
        await eventually(lambda: _dead_count(app, "ticker", 1), 10, "the tick filed")
    assert ran == []
    (dead,) = await app.list("ticker", "dead")
    assert dead.task_id.startswith("hourly@") and STALLED.fullmatch(dead.error or ""), dead
    schedule = await app.get("ticker", "hourly")
    assert schedule is not None and schedule.state == "due"  # the next tick waits
    (listed,) = await app.crons()
    assert listed.name == "hourly" and not listed.paused
