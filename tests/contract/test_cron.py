"""Cron schedules on each store: ticks, management by name, missed ticks, overlap, jitter."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import duetime
from duetime.stores.base import Outcome
from duetime.testing import Harness, Run, harness
from duetime.triggers.cron.expression import parse_cron
from tests.helpers import eventually, running

EVERY_SECOND = "* * * * * *"
S = timedelta(seconds=1)
#: A whole second: each step of a second lands on a tick.
T = datetime(2031, 3, 3, 9, 0, 0, tzinfo=UTC)


async def _steps(h: Harness, count: int, every: timedelta = S) -> list[Run]:
    """Move the clock ``count`` times by ``every``, running what is due after each step."""
    runs: list[Run] = []
    for _ in range(count):
        h.advance(every)
        runs += await h.run_due()
    return runs


async def _until(h: Harness, done: Callable[[], bool], steps: int = 20) -> None:
    """Move the clock a second at a time, running what is due, until ``done()``."""
    for _ in range(steps):
        if done():
            return
        await _steps(h, 1)
    assert done(), f"not done after {steps} steps"


async def test_a_declared_schedule_runs_each_tick_once_with_a_stable_occurrence_id(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    runs: list[duetime.Context] = []

    @app.cron(EVERY_SECOND, name="heartbeat")
    async def heartbeat(ctx: duetime.Context) -> None:
        runs.append(ctx)

    async with harness(app, url=store_url, start=T) as h:
        h.advance(S - timedelta(milliseconds=1))
        assert await h.run_due() == []  # a millisecond before the first tick
        h.advance(timedelta(milliseconds=1))
        await h.run_due()
        await _steps(h, 2)  # then the ticks at T + 2 s and T + 3 s, each on time

    ticks = [int(ctx.due.timestamp() * 1000) for ctx in runs]
    first = int((T + S).timestamp() * 1000)
    assert ticks == [first, first + 1000, first + 2000]
    assert [ctx.occurrence for ctx in runs] == [f"heartbeat@{t}" for t in ticks]
    assert all(ctx.task_type == "heartbeat" and ctx.attempt == 1 for ctx in runs)


async def test_a_schedule_added_at_run_time_is_managed_by_name(app: duetime.App) -> None:
    seen: list[dict[str, Any]] = []

    @app.task("buildReport")
    async def build_report(payload: dict[str, Any], ctx: duetime.Context) -> None:
        seen.append(payload)

    nightly: dict[str, Any] = {
        "task": "buildReport",
        "tz": "Europe/Madrid",
        "payload": {"kind": "sales"},
    }
    assert await app.add_cron("nightly", "0 2 * * *", **nightly) is True
    assert await app.add_cron("nightly", "0 2 * * *", **nightly) is False  # same: no write
    runs = await app.next_runs("nightly", 3)
    assert [(r.hour, r.minute, r.tzinfo.key) for r in runs] == [(2, 0, "Europe/Madrid")] * 3  # type: ignore[union-attr]
    (info,) = await app.crons()
    assert (info.name, info.task_type, info.expression, info.payload) == (
        "nightly",
        "buildReport",
        "0 2 * * *",
        {"kind": "sales"},
    )

    await app.pause_cron("nightly")
    assert await app.next_runs("nightly") == []
    assert (await app.crons())[0].paused is True
    await app.resume_cron("nightly")
    assert len(await app.next_runs("nightly", 2)) == 2

    # Declaring it again with another definition updates it.
    await app.add_cron("nightly", "30 4 * * *", task="buildReport", tz="Europe/Madrid")
    assert {(r.hour, r.minute) for r in await app.next_runs("nightly", 3)} == {(4, 30)}

    assert await app.remove_cron("nightly") is True
    assert await app.crons() == []
    with pytest.raises(duetime.ScheduleNotFound):
        await app.next_runs("nightly")
    assert seen == []


async def test_schedules_survive_a_restart(app: duetime.App, store_url: str) -> None:
    await app.add_cron("tick", EVERY_SECOND, task="mail", payload={"n": 1})
    await app.close()

    fresh = duetime.App(store_url, namespace=app.namespace)  # another process, say
    ran: list[str] = []

    @fresh.task("mail")
    async def mail(payload: dict[str, Any], ctx: duetime.Context) -> None:
        ran.append(ctx.occurrence)

    try:
        assert [c.name for c in await fresh.crons()] == ["tick"]
        async with running(fresh):
            await eventually(lambda: len(ran) >= 1, within=25, what="a tick of the schedule")
    finally:
        await fresh.close()
    assert all(o.startswith("tick@") for o in ran)


async def test_a_name_belongs_to_one_task_type(app: duetime.App) -> None:
    await app.add_cron("shared", "@daily", task="mail")
    with pytest.raises(duetime.ValidationError) as caught:
        await app.add_cron("shared", "@daily", task="report")
    assert caught.value.field == "name" and "mail" in str(caught.value)


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"expression": "61 * * * *"}, "cron"),
        ({"tz": "Nowhere/Land"}, "tz"),
        ({"jitter": timedelta(hours=2), "expression": "0 * * * *"}, "jitter"),
        ({"missed": "sometimes"}, "missed"),
        ({"overlap": "queue"}, "overlap"),
        ({"payload": [1]}, "payload"),
    ],
)
async def test_a_bad_schedule_is_refused_naming_the_field(
    app: duetime.App, options: dict[str, Any], field: str
) -> None:
    args: dict[str, Any] = {"expression": "@daily", "task": "mail", **options}
    expression = args.pop("expression")
    with pytest.raises(duetime.ValidationError) as caught:
        await app.add_cron("bad", expression, **args)
    assert caught.value.field == field
    assert await app.crons() == []


def test_a_cron_name_taken_by_another_handler_is_refused() -> None:
    app = duetime.App("redis://localhost:1/0")

    @app.task("cleanup")
    async def cleanup(payload: dict[str, Any]) -> None: ...

    with pytest.raises(duetime.ValidationError, match="already registered"):

        @app.cron("@hourly", name="cleanup")
        async def other(ctx: duetime.Context) -> None: ...


@pytest.mark.parametrize("policy", ["skip", "once", "all"])
async def test_ticks_missed_while_every_worker_was_down_follow_the_policy(
    store_url: str, namespace: str, policy: str
) -> None:
    app = duetime.App(namespace=namespace)
    runs: list[int] = []

    @app.task("catchup")
    async def catchup(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs.append(int(ctx.due.timestamp() * 1000))

    async with harness(app, url=store_url, start=T) as h:
        # A yearly schedule whose workers were all down for the next three years.
        await app.add_cron("yearly", "0 0 1 1 *", task="catchup", missed=policy)  # type: ignore[arg-type]
        before = h.clock.now_ms()
        h.advance(timedelta(days=3 * 366))
        await h.run_due()
        missed = parse_cron("0 0 1 1 *").ticks_until(before, h.clock.now_ms(), 10)
        (info,) = await app.crons()
        (pending,) = await app.next_runs("yearly", 1)

    assert len(missed) == 3
    assert runs == {"skip": [], "once": missed[-1:], "all": missed}[policy]
    assert info.missed_count == len(missed) - len(runs)
    assert pending > h.now  # caught up: it waits for the next year's tick


async def test_overlap_skip_skips_the_ticks_that_come_due_while_a_run_runs(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    ticks: list[int] = []
    box: list[Harness] = []

    @app.cron(EVERY_SECOND, name="slow", overlap="skip", timeout=10)
    async def slow(ctx: duetime.Context) -> None:
        ticks.append(int(ctx.due.timestamp() * 1000))
        if len(ticks) == 1:
            box[0].advance(timedelta(milliseconds=2200))  # T + 2 s and T + 3 s come due

    async with harness(app, url=store_url, start=T) as h:
        box.append(h)
        h.advance(S)
        await h.run_due()  # the first run, from T + 1 s to T + 3.2 s
        await _steps(h, 1, every=timedelta(milliseconds=799))
        assert len(ticks) == 1  # a millisecond before T + 4 s
        await _steps(h, 1, every=timedelta(milliseconds=1))
        info = next(c for c in await app.crons() if c.name == "slow")

    first = int((T + S).timestamp() * 1000)
    assert ticks == [first, first + 3000]  # the two ticks during the first run were skipped
    assert info.skipped_count == 2


async def test_overlap_allow_runs_each_tick_even_while_the_last_one_runs(
    app: duetime.App,
) -> None:
    # Real time and a real worker: the point is two runs at once. Each run lasts until the
    # next tick's run has begun (no sleep: it waits on that), so runs overlap by design.
    running_now = 0
    peak = 0
    occurrences: list[str] = []
    began: list[asyncio.Event] = [asyncio.Event() for _ in range(4)]

    @app.cron(EVERY_SECOND, name="fast", overlap="allow")
    async def fast(ctx: duetime.Context) -> None:
        nonlocal running_now, peak
        running_now += 1
        peak = max(peak, running_now)
        occurrences.append(ctx.occurrence)
        mine = len(occurrences)
        if mine <= len(began):
            began[mine - 1].set()
        if mine < 3:
            await asyncio.wait_for(began[mine].wait(), 25)  # the next tick's run began
        running_now -= 1

    async with running(app):
        await asyncio.wait_for(began[2].wait(), 25)

    assert peak >= 2
    ticks = [int(o.split("@")[1]) for o in occurrences[:3]]
    assert [b - a for a, b in zip(ticks, ticks[1:], strict=False)] == [1000, 1000]


async def test_jitter_delays_runs_but_not_their_tick(store_url: str, namespace: str) -> None:
    app = duetime.App(namespace=namespace)
    late: list[int] = []
    dues: list[int] = []

    @app.cron(EVERY_SECOND, name="jittery", jitter=timedelta(milliseconds=400))
    async def jittery(ctx: duetime.Context) -> None:
        dues.append(int(ctx.due.timestamp() * 1000))
        late.append(app.clock.now_ms() - dues[-1])

    async with harness(app, url=store_url, start=T) as h:
        # A look every 100 ms up to T + 3.5 s: the ticks at T + 1 s, 2 s and 3 s each run
        # at the first look at or after its jittered time.
        await _steps(h, 35, every=timedelta(milliseconds=100))

    first = int((T + S).timestamp() * 1000)
    assert dues == [first, first + 1000, first + 2000]  # the ticks are not moved
    # At most 400 ms late, so run by the look 500 ms after its tick; some were delayed.
    assert all(0 <= d <= 500 for d in late) and max(late) > 0, late


async def test_a_failing_tick_is_retried_then_filed_and_the_schedule_goes_on(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    attempts: list[tuple[str, int]] = []

    @app.cron(
        EVERY_SECOND,
        name="fragile",
        retries=1,
        backoff=duetime.Backoff(base=timedelta(milliseconds=50), jitter=0),
    )
    async def fragile(ctx: duetime.Context) -> None:
        attempts.append((ctx.occurrence, ctx.attempt))
        if len(attempts) <= 2:
            raise RuntimeError("tick failed")

    async with harness(app, url=store_url, start=T) as h:
        await _steps(h, 1)  # the tick at T + 1 s fails
        await _steps(h, 1, every=timedelta(milliseconds=49))
        assert len(attempts) == 1  # its back-off of 50 ms is not over
        await _steps(h, 1, every=timedelta(milliseconds=1))  # its retry fails: filed
        await _steps(h, 1, every=timedelta(milliseconds=950))  # the tick at T + 2 s
        dead = await app.list("fragile", "dead")

    first = attempts[0][0]
    assert attempts[:2] == [(first, 1), (first, 2)]
    assert attempts[2][0] != first and attempts[2][1] == 1 and len(attempts) == 3
    assert [d.task_id for d in dead] == [first]
    assert dead[0].error == "RuntimeError: tick failed"


async def test_a_dead_schedule_retried_by_hand_is_a_schedule_again(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    ticks: list[str] = []

    @app.task("ticker")
    async def ticker(payload: dict[str, Any], ctx: duetime.Context) -> None:
        ticks.append(ctx.occurrence)

    async with harness(app, url=store_url, start=T) as h:
        await app.add_cron("everySecond", EVERY_SECOND, task="ticker")
        # A worker held the schedule and it went to the dead letters (at-most-once, or
        # stalled past max_stalls): what the store does to it, done here by hand.
        store = await app.open()
        now = h.clock.now_ms()
        (held,) = (
            await store.claim(
                "ticker", now_ms=now + 2000, limit=1, lease_ms=1000, max_stalls=0,
                at_most_once=True,
            )
        ).claims  # fmt: skip
        await store.settle("ticker", [Outcome("dead", held, None, held.record, "stalled")], now)
        info = await app.get("ticker", "everySecond")
        assert info is not None and info.state == "dead"
        await _steps(h, 3)
        assert ticks == []  # dead: no tick runs

        await app.retry("ticker", "everySecond")
        await _steps(h, 2)
        (schedule,) = await app.crons()

    assert len(set(ticks)) >= 2
    assert (schedule.name, schedule.stored, schedule.paused) == ("everySecond", True, False)


async def _crash_the_next_tick(app: duetime.App, name: str, task_type: str) -> int:
    """A worker claims the schedule's next tick and dies: its lease, longer than the
    schedule's period, holds the schedule for 2.5 s of the clock. Returns the tick."""
    (waiting,) = await app.next_runs(name, 1)
    tick = round(waiting.timestamp() * 1000)
    store = await app.open()
    claimed = await store.claim(
        task_type, now_ms=tick, limit=1, lease_ms=2500, max_stalls=3, at_most_once=False
    )
    assert [c.id for c in claimed.claims] == [name]
    return tick


async def _unaccounted(app: duetime.App, name: str, task_type: str, first: int, ran: int) -> int:
    """How many ticks from ``first`` up to the one the schedule waits for neither ran (nor
    wait to, handed off) nor were counted as missed or skipped: negative if some were
    counted twice."""
    (info,) = [c for c in await app.crons() if c.name == name]
    (pending,) = await app.next_runs(name, 1)
    handed_off = [t for t in await app.list(task_type, "due") if t.task_id != name]
    ticks = (round(pending.timestamp() * 1000) - first) // 1000
    return ticks - ran - len(handed_off) - info.missed_count - info.skipped_count


@pytest.mark.parametrize("overlap", ["skip", "allow"])
async def test_a_tick_whose_worker_died_runs_again_then_the_schedule_goes_on(
    store_url: str, namespace: str, overlap: str
) -> None:
    app = duetime.App(namespace=namespace)
    runs: list[tuple[str, int]] = []

    @app.task("ticker")
    async def ticker(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs.append((ctx.occurrence, ctx.attempt))

    async with harness(app, url=store_url, start=T) as h:
        await app.add_cron("crashy", EVERY_SECOND, task="ticker", overlap=overlap)  # type: ignore[arg-type]
        first = await _crash_the_next_tick(app, "crashy", "ticker")
        await _until(h, lambda: len(runs) >= 4)
        unaccounted = await _unaccounted(app, "crashy", "ticker", first, len(runs))
        (info,) = await app.crons()

    # The crashed tick runs first, under its own id: a handler's second attempt with
    # overlap="skip"; with "allow" the handler never started (the crashed claim was to hand
    # the tick off), so its first.
    assert runs[0] == (f"crashy@{first}", 2 if overlap == "skip" else 1)
    # Every later run is the first attempt of a tick of its own.
    later = [int(occurrence.split("@")[1]) for occurrence, _ in runs[1:]]
    assert {attempt for _, attempt in runs[1:]} == {1}
    assert later == sorted(set(later)) and later[0] > first
    # Every tick up to the one the schedule waits for ran, or is counted as missed (its
    # successor came due while the lease held it) or skipped (overlap): none twice, none lost.
    assert unaccounted == 0, runs
    assert info.missed_count >= 1  # the tick after the crashed one could not start in time


async def test_a_crashed_tick_whose_re_run_fails_is_retried_and_no_tick_is_lost(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    runs: list[tuple[str, int]] = []
    quick = duetime.Backoff(base=timedelta(milliseconds=50), jitter=0)

    @app.task("ticker", retries=1, backoff=quick)
    async def ticker(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs.append((ctx.occurrence, ctx.attempt))
        if len(runs) == 1:
            raise RuntimeError("the re-run failed too")

    async with harness(app, url=store_url, start=T) as h:
        await app.add_cron("crashy", EVERY_SECOND, task="ticker")
        first = await _crash_the_next_tick(app, "crashy", "ticker")
        await _until(h, lambda: len(runs) >= 4)
        unaccounted = await _unaccounted(app, "crashy", "ticker", first, len(runs) - 1)

    crashed = f"crashy@{first}"
    assert runs[:2] == [(crashed, 2), (crashed, 3)]  # the crash, the failure, then success
    assert {attempt for _, attempt in runs[2:]} == {1}
    assert crashed not in {occurrence for occurrence, _ in runs[2:]}
    assert unaccounted == 0, runs
