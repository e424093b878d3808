"""Cron schedules on each store: limit, start and end, grace, immediately, trigger_cron and
run_now, on a clock the tests move."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

import duetime
from duetime.clock import epoch_ms
from duetime.testing import harness
from tests.helpers import ClaimSpy, eventually, running

MADRID = ZoneInfo("Europe/Madrid")
DAY = timedelta(days=1)
#: A Monday, an hour before the weekly report.
MONDAY_8AM = datetime(2031, 3, 3, 8, 0, tzinfo=MADRID)


def recording(app: duetime.App, name: str) -> list[str]:
    """A handler of ``name`` that notes the occurrence of each run."""
    occurrences: list[str] = []

    @app.task(name)
    async def handler(payload: dict[str, Any], ctx: duetime.Context) -> None:
        occurrences.append(ctx.occurrence)

    return occurrences


def ticks(occurrences: list[str]) -> list[datetime]:
    return [datetime.fromtimestamp(int(o.rpartition("@")[2]) / 1000, UTC) for o in occurrences]


async def info(app: duetime.App, name: str) -> duetime.CronInfo:
    (found,) = [c for c in await app.crons() if c.name == name]
    return found


async def test_a_schedule_with_a_limit_is_finished_after_that_many_runs_and_stays_listed(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    ran = recording(app, "report")
    async with harness(app, url=store_url, start=MONDAY_8AM) as h:
        await app.add_cron("weekly", "0 9 * * MON", task="report", tz="Europe/Madrid", limit=3)
        predicted = await app.next_runs("weekly", 5)
        h.advance(timedelta(hours=1))
        for _ in range(5):
            await h.run_due()
            h.advance(timedelta(weeks=1))
        finished = await info(app, "weekly")
        assert await app.next_runs("weekly", 3) == []
        # An extra run by hand still runs, and is not one of the limit's.
        extra = await app.trigger_cron("weekly")
        await h.run_due()
        after_extra = await info(app, "weekly")

    assert (
        ticks(ran[:3]) == predicted == [MONDAY_8AM + timedelta(hours=1, weeks=n) for n in range(3)]
    )
    assert ran[3:] == [extra]
    assert (finished.finished, finished.run_count, finished.limit) == (True, 3, 3)
    assert (finished.next_run, finished.stored, finished.paused) == (None, True, False)
    assert (after_extra.finished, after_extra.run_count) == (True, 3)


async def test_no_tick_runs_before_start_or_after_end(store_url: str, namespace: str) -> None:
    app = duetime.App(namespace=namespace)
    ran = recording(app, "report")
    begin = datetime(2031, 3, 1, 9, 0, tzinfo=UTC)  # each step of a day lands on a tick
    # A tick at the start or at the end is one of the schedule's.
    start, end = datetime(2031, 3, 3, 9, 0, tzinfo=UTC), datetime(2031, 3, 5, 9, 0, tzinfo=UTC)
    async with harness(app, url=store_url, start=begin) as h:
        await app.add_cron("daily", "0 9 * * *", task="report", start=start, end=end)
        predicted = await app.next_runs("daily", 10)
        before = await info(app, "daily")
        for _ in range(8):
            h.advance(DAY)
            await h.run_due()
        after = await info(app, "daily")

    expected = [datetime(2031, 3, day, 9, 0, tzinfo=UTC) for day in (3, 4, 5)]
    assert ticks(ran) == predicted == expected
    assert (before.start, before.end, before.finished) == (start, end, False)
    assert (after.finished, after.run_count, after.next_run) == (True, 3, None)


@pytest.mark.parametrize(("missed", "runs", "missed_count"), [("skip", 0, 5), ("all", 5, 0)])
async def test_ticks_after_the_end_are_neither_run_nor_missed_when_workers_come_back_late(
    store_url: str, namespace: str, missed: str, runs: int, missed_count: int
) -> None:
    app = duetime.App(namespace=namespace)
    ran = recording(app, "report")
    begin = datetime(2031, 3, 1, 12, 0, tzinfo=UTC)
    end = datetime(2031, 3, 6, 9, 0, tzinfo=UTC)  # five ticks: the 2nd to the 6th
    async with harness(app, url=store_url, start=begin) as h:
        await app.add_cron("daily", "0 9 * * *", task="report", end=end, missed=missed)  # type: ignore[arg-type]
        h.advance(20 * DAY)  # every worker down until long after the end
        await h.run_due()
        after = await info(app, "daily")

    assert len(ran) == runs
    assert (after.missed_count, after.finished, after.run_count) == (missed_count, True, runs)


@pytest.mark.parametrize(
    ("grace", "expected"),
    [(None, ["01:00"]), (timedelta(minutes=10), ["00:00", "01:00"])],
    ids=["a minute by default", "ten minutes"],
)
async def test_grace_says_how_late_a_tick_may_start(
    store_url: str, namespace: str, grace: timedelta | None, expected: list[str]
) -> None:
    app = duetime.App(namespace=namespace)
    ran = recording(app, "report")
    begin = datetime(2031, 3, 1, 23, 59, tzinfo=UTC)
    async with harness(app, url=store_url, start=begin) as h:
        await app.add_cron("hourly", "0 * * * *", task="report", grace=grace)
        for late in (timedelta(minutes=6), timedelta(minutes=55), timedelta(minutes=59)):
            h.advance(late)  # 00:05, then 01:00, then 01:59 (02:00 is not due yet)
            await h.run_due()
        after = await info(app, "hourly")

    assert [t.strftime("%H:%M") for t in ticks(ran)] == expected
    assert after.missed_count == 2 - len(expected)
    assert after.grace == (grace or timedelta(minutes=1))


async def test_trigger_cron_runs_once_now_beside_the_ticks(store_url: str, namespace: str) -> None:
    app = duetime.App(namespace=namespace)
    ran = recording(app, "report")
    async with harness(app, url=store_url, start=MONDAY_8AM) as h:
        await app.add_cron(
            "weekly", "0 9 * * MON", task="report", tz="Europe/Madrid", payload={"k": 1}
        )
        await app.pause_cron("weekly")
        await app.resume_cron("weekly")
        before = await app.next_runs("weekly", 3)
        extra = await app.trigger_cron("weekly")
        pending = await app.get("report", extra)
        runs = await h.run_due()
        after = await app.next_runs("weekly", 3)
        counted = (await info(app, "weekly")).run_count
        with pytest.raises(duetime.ScheduleNotFound):
            await app.trigger_cron("nosuch")

    assert extra == f"weekly@{epoch_ms(MONDAY_8AM)}"
    assert pending is not None and pending.due == MONDAY_8AM and pending.payload == {"k": 1}
    assert [(r.task_id, r.outcome) for r in runs] == [(extra, "done")]
    assert ran == [extra]
    assert before == after  # the ticks are as they were
    assert counted == 0


async def test_run_now_on_a_schedule_runs_its_next_tick_now_and_keeps_the_rest(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    ran = recording(app, "report")
    async with harness(app, url=store_url, start=MONDAY_8AM) as h:
        await app.add_cron("weekly", "0 9 * * MON", task="report", tz="Europe/Madrid")
        tick, following, *_ = await app.next_runs("weekly", 3)
        await app.run_now("report", "weekly")
        await h.run_due()
        after = await app.next_runs("weekly", 1)
        await app.pause_cron("weekly")
        with pytest.raises(duetime.ValidationError, match="trigger_cron"):
            await app.run_now("report", "weekly")

    assert ticks(ran) == [tick]
    assert after == [following]


def _kickoff(app: duetime.App, runs: list[str], tz: str = "UTC") -> None:
    @app.cron("0 0 1 1 *", name="kickoff", tz=tz, immediately=True)
    async def kickoff(ctx: duetime.Context) -> None:
        runs.append(ctx.occurrence)


async def test_immediately_runs_once_across_two_workers_and_a_restart(
    store_url: str, namespace: str
) -> None:
    runs: list[str] = []
    apps = [duetime.App(store_url, namespace=namespace) for _ in range(4)]
    for app in apps[:3]:
        _kickoff(app, runs)
    _kickoff(apps[3], runs, tz="Europe/Madrid")  # declared again, with a change
    try:
        # Two workers starting together both find the schedule missing and write it.
        first, second = apps[0].worker(monitored=False), apps[1].worker(monitored=False)
        await asyncio.gather(first.write_declared(), second.write_declared())
        # "Nothing more runs" is each worker's next claim after the run or its start
        # answered: a second immediate run would be due by then, so claimed and run
        # (a worker stops only once its runs are over).
        spies = [ClaimSpy(await app.open()) for app in apps]
        async with running(apps[0]), running(apps[1]):
            await eventually(lambda: len(runs) >= 1, within=25, what="the immediate run")
            marks = [spy.mark("kickoff") for spy in spies[:2]]
            for spy, mark in zip(spies[:2], marks, strict=True):
                await spy.since(mark)
        for restarted, spy in zip(apps[2:], spies[2:], strict=True):  # a restart, then a
            mark = spy.mark("kickoff")  # redeclaration
            async with running(restarted):
                await spy.since(mark)
        (schedule,) = await apps[3].crons()
    finally:
        for app in apps:
            await app.close()

    assert len(runs) == 1 and runs[0].startswith("kickoff@")
    assert (schedule.tz, schedule.run_count, schedule.next_run is not None) == (
        "Europe/Madrid",
        1,
        True,
    )


async def test_add_cron_with_immediately_runs_once_however_often_it_is_added(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    ran = recording(app, "report")
    async with harness(app, url=store_url, start=MONDAY_8AM) as h:
        options: dict[str, Any] = {"task": "report", "immediately": True, "tz": "Europe/Madrid"}
        assert await app.add_cron("weekly", "0 9 * * MON", **options) is True
        assert await app.add_cron("weekly", "0 9 * * MON", **options) is False
        assert await app.next_runs("weekly", 2) == [MONDAY_8AM, MONDAY_8AM + timedelta(hours=1)]
        await h.run_due()
        await app.add_cron("weekly", "0 10 * * MON", **options)  # changed: written again
        await h.run_due()
        h.advance(timedelta(hours=2))
        await h.run_due()

    assert ticks(ran) == [MONDAY_8AM, MONDAY_8AM + timedelta(hours=2)]


async def test_immediately_waits_for_a_later_start(store_url: str, namespace: str) -> None:
    app = duetime.App(namespace=namespace)
    ran = recording(app, "report")
    start = MONDAY_8AM + 2 * DAY
    async with harness(app, url=store_url, start=MONDAY_8AM) as h:
        await app.add_cron("weekly", "0 9 * * MON", task="report", start=start, immediately=True)
        await h.run_due()
        assert ran == []
        h.advance(2 * DAY)
        await h.run_due()

    assert ticks(ran) == [start]


@pytest.mark.parametrize(
    ("options", "field"),
    [
        (
            {"start": datetime(2031, 2, 1, tzinfo=UTC), "end": datetime(2031, 1, 1, tzinfo=UTC)},
            "end",
        ),
        ({"start": datetime(2031, 2, 1)}, "start"),
        ({"end": "2031-01-01"}, "end"),
        ({"limit": 0}, "limit"),
        ({"limit": True}, "limit"),
        ({"grace": 0}, "grace"),
        ({"grace": -5}, "grace"),
        ({"immediately": "yes"}, "immediately"),
        ({"tz": "Mars/Olympus", "limit": 3}, "tz"),
        ({"repeat": True}, "repeat"),
    ],
)
async def test_bad_bounds_are_refused_naming_the_field_and_nothing_is_written(
    app: duetime.App, options: dict[str, Any], field: str
) -> None:
    with pytest.raises(duetime.ValidationError) as caught:
        await app.add_cron("bad", "@daily", task="mail", **options)
    assert caught.value.field == field
    assert await app.crons() == []


async def test_a_declared_schedule_lists_the_runs_its_first_worker_will_make(
    app: duetime.App,
) -> None:
    start = datetime(2031, 3, 3, 9, 0, tzinfo=UTC)

    @app.cron("0 9 * * *", name="daily", start=start, limit=2, immediately=True)
    async def daily(ctx: duetime.Context) -> None: ...

    # Not stored yet: the immediate run at the start (a tick too), then the next tick.
    assert await app.next_runs("daily", 5) == [start, start + DAY]
    (info,) = await app.crons()
    assert (info.stored, info.start, info.limit, info.finished) == (False, start, 2, False)
