"""Cron schedules on each store: ticks, management by name, missed ticks, overlap, jitter."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta
from typing import Any

import pytest

import duetime
from duetime.record import Record
from duetime.stores.base import NewTask, Outcome
from duetime.triggers.cron.expression import parse_cron
from tests.helpers import eventually, running

EVERY_SECOND = "* * * * * *"


async def test_a_declared_schedule_runs_each_tick_once_with_a_stable_occurrence_id(
    app: duetime.App,
) -> None:
    runs: list[duetime.Context] = []

    @app.cron(EVERY_SECOND, name="heartbeat")
    async def heartbeat(ctx: duetime.Context) -> None:
        runs.append(ctx)

    async with running(app):
        await eventually(lambda: len(runs) >= 3, within=6)

    ticks = [int(ctx.due.timestamp() * 1000) for ctx in runs]
    assert all(t % 1000 == 0 for t in ticks)  # whole seconds
    assert [b - a for a, b in zip(ticks, ticks[1:], strict=False)] == [1000] * (len(ticks) - 1)
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
            await eventually(lambda: len(ran) >= 2, within=5)
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
    app: duetime.App, policy: str
) -> None:
    runs: list[int] = []

    @app.task("catchup")
    async def catchup(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs.append(int(ctx.due.timestamp() * 1000))

    # A yearly schedule whose workers were all down for the last three years.
    await app.add_cron("yearly", "0 0 1 1 *", task="catchup", missed=policy)  # type: ignore[arg-type]
    now = await app.now_ms()
    expr = parse_cron("0 0 1 1 *")
    missed = expr.ticks_until(now - 3 * 366 * 86_400_000, now, 10)[-3:]
    await _wait_since(app, "yearly", "catchup", missed[0])

    expected = {"skip": [], "once": missed[-1:], "all": missed}[policy]

    async def caught_up() -> bool:  # the last catch-up run may still be starting
        return len(runs) >= len(expected) and await _next_is_future(app, "yearly")

    async with running(app):
        await eventually(caught_up, within=10)
        await asyncio.sleep(0.2)
    (info,) = await app.crons()

    assert runs == expected
    assert info.missed_count == len(missed) - len(expected)


async def _wait_since(app: duetime.App, name: str, task_type: str, tick: int) -> None:
    """Make the schedule wait for a tick long past, as if every worker had been down."""
    store = await app.open()
    _, stored = await app.named_triggers.locate(name)
    assert stored is not None and stored.record is not None
    record = Record.decode(stored.record)
    rewound = dataclasses.replace(record, occurrence_ms=tick).encode()
    await store.schedule(task_type, [NewTask(name, tick, rewound)])


async def _next_is_future(app: duetime.App, name: str) -> bool:
    runs = await app.next_runs(name, 1)
    return bool(runs) and runs[0].timestamp() * 1000 > await app.now_ms()


async def test_overlap_skip_never_runs_a_schedule_twice_at_once(app: duetime.App) -> None:
    running_now = 0
    peak = 0
    ticks: list[int] = []

    @app.cron(EVERY_SECOND, name="slow", overlap="skip", timeout=10)
    async def slow(ctx: duetime.Context) -> None:
        nonlocal running_now, peak
        running_now += 1
        peak = max(peak, running_now)
        ticks.append(int(ctx.due.timestamp() * 1000))
        await asyncio.sleep(2.2)
        running_now -= 1

    async with running(app):
        await eventually(lambda: len(ticks) >= 2, within=8)
    info = next(c for c in await app.crons() if c.name == "slow")

    assert peak == 1
    assert ticks[1] - ticks[0] >= 3000  # the ticks during the first run were skipped
    assert info.skipped_count >= 2


async def test_overlap_allow_runs_each_tick_even_while_the_last_one_runs(
    app: duetime.App,
) -> None:
    running_now = 0
    peak = 0
    occurrences: list[str] = []

    @app.cron(EVERY_SECOND, name="fast", overlap="allow")
    async def fast(ctx: duetime.Context) -> None:
        nonlocal running_now, peak
        running_now += 1
        peak = max(peak, running_now)
        occurrences.append(ctx.occurrence)
        await asyncio.sleep(1.6)
        running_now -= 1

    async with running(app):
        await eventually(lambda: len(occurrences) >= 3, within=8)

    assert peak >= 2
    ticks = [int(o.split("@")[1]) for o in occurrences[:3]]
    assert [b - a for a, b in zip(ticks, ticks[1:], strict=False)] == [1000, 1000]


async def test_jitter_delays_runs_but_not_their_tick(app: duetime.App) -> None:
    late: list[int] = []

    @app.cron(EVERY_SECOND, name="jittery", jitter=timedelta(milliseconds=400))
    async def jittery(ctx: duetime.Context) -> None:
        late.append(app.clock.now_ms() - int(ctx.due.timestamp() * 1000))

    async with running(app):
        await eventually(lambda: len(late) >= 4, within=8)
    assert all(0 <= d <= 550 for d in late) and max(late) > 20


async def test_a_failing_tick_is_retried_then_filed_and_the_schedule_goes_on(
    app: duetime.App,
) -> None:
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

    async with running(app):
        await eventually(lambda: len(attempts) >= 3, within=6)
        dead = await app.list("fragile", "dead")

    first = attempts[0][0]
    assert attempts[:2] == [(first, 1), (first, 2)]
    assert attempts[2][0] != first and attempts[2][1] == 1
    assert [d.task_id for d in dead] == [first]
    assert dead[0].error == "RuntimeError: tick failed"


async def test_a_dead_schedule_retried_by_hand_is_a_schedule_again(app: duetime.App) -> None:
    ticks: list[str] = []

    @app.task("ticker")
    async def ticker(payload: dict[str, Any], ctx: duetime.Context) -> None:
        ticks.append(ctx.occurrence)

    await app.add_cron("everySecond", EVERY_SECOND, task="ticker")
    # A worker held the schedule and it went to the dead letters (at-most-once, or stalled
    # past max_stalls): what the store does to it, done here by hand.
    store = await app.open()
    now = await app.now_ms()
    (held,) = (
        await store.claim(
            "ticker", now_ms=now + 2000, limit=1, lease_ms=1000, max_stalls=0, at_most_once=True
        )
    ).claims
    await store.settle("ticker", [Outcome("dead", held, None, held.record, "stalled")], now)
    info = await app.get("ticker", "everySecond")
    assert info is not None and info.state == "dead"

    await app.retry("ticker", "everySecond")
    async with running(app):
        await eventually(lambda: len(set(ticks)) >= 2, within=5)

    (schedule,) = await app.crons()
    assert (schedule.name, schedule.stored, schedule.paused) == ("everySecond", True, False)


async def _crash_the_next_tick(app: duetime.App, name: str, task_type: str) -> int:
    """A worker claims the schedule's next tick and dies: its lease, longer than the
    schedule's period, holds the schedule for 2.5 s. Returns the tick."""
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
    app: duetime.App, overlap: str
) -> None:
    runs: list[tuple[str, int]] = []

    @app.task("ticker")
    async def ticker(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs.append((ctx.occurrence, ctx.attempt))

    await app.add_cron("crashy", EVERY_SECOND, task="ticker", overlap=overlap)  # type: ignore[arg-type]
    first = await _crash_the_next_tick(app, "crashy", "ticker")
    async with running(app):
        await eventually(lambda: len(runs) >= 4, within=10, what="four runs")

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
    assert await _unaccounted(app, "crashy", "ticker", first, len(runs)) == 0, runs
    (info,) = await app.crons()
    assert info.missed_count >= 1  # the tick after the crashed one could not start in time


async def test_a_crashed_tick_whose_re_run_fails_is_retried_and_no_tick_is_lost(
    app: duetime.App,
) -> None:
    runs: list[tuple[str, int]] = []
    quick = duetime.Backoff(base=timedelta(milliseconds=50), jitter=0)

    @app.task("ticker", retries=1, backoff=quick)
    async def ticker(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs.append((ctx.occurrence, ctx.attempt))
        if len(runs) == 1:
            raise RuntimeError("the re-run failed too")

    await app.add_cron("crashy", EVERY_SECOND, task="ticker")
    first = await _crash_the_next_tick(app, "crashy", "ticker")
    async with running(app):
        await eventually(lambda: len(runs) >= 4, within=10, what="four runs")

    crashed = f"crashy@{first}"
    assert runs[:2] == [(crashed, 2), (crashed, 3)]  # the crash, the failure, then success
    assert {attempt for _, attempt in runs[2:]} == {1}
    assert crashed not in {occurrence for occurrence, _ in runs[2:]}
    assert await _unaccounted(app, "crashy", "ticker", first, len(runs) - 1) == 0, runs
