"""A cron schedule's bounds, limit, grace and immediate run: where it starts, when it is
finished, which ticks it lists, and how it is stored."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from duetime.clock import NEVER_MS
from duetime.triggers.cron.expression import parse_cron
from duetime.triggers.cron.policy import plan_claim
from duetime.triggers.cron.trigger import CronTrigger

HOURLY = parse_cron("0 * * * *")
T = round(datetime(2030, 1, 1, tzinfo=UTC).timestamp() * 1000)  # a midnight, a tick
HOUR = 3_600_000
MIN = 60_000


def test_bounds_and_counters_round_trip_and_an_old_schedule_reads_with_none_of_them() -> None:
    spec = CronTrigger(
        HOURLY,
        start_ms=T,
        end_ms=T + 10 * HOUR,
        limit=5,
        grace_ms=10 * MIN,
        run_count=2,
        finished=True,
        immediate=True,
    )
    stored = spec.to_json()
    assert {k: stored[k] for k in ("s", "e", "l", "g", "nr", "f", "i")} == {
        "s": T,
        "e": T + 10 * HOUR,
        "l": 5,
        "g": 10 * MIN,
        "nr": 2,
        "f": True,
        "i": True,
    }
    assert CronTrigger.from_json(stored) == spec
    old = CronTrigger.from_json({"x": "0 * * * *", "z": "UTC"})
    assert old == CronTrigger(HOURLY)
    assert (old.start_ms, old.end_ms, old.limit, old.grace_ms, old.run_count) == (
        None,
        None,
        None,
        MIN,
        0,
    )


def test_the_first_tick_is_not_before_the_start_and_one_at_the_start_counts() -> None:
    nxt = CronTrigger(HOURLY, start_ms=T + 5 * HOUR).start("{}", now_ms=T + 1)
    assert (nxt.due_ms, nxt.occurrence_ms) == (T + 5 * HOUR, T + 5 * HOUR)
    assert CronTrigger(HOURLY, start_ms=T - HOUR).start("{}", now_ms=T + 1).due_ms == T + HOUR


def test_a_schedule_past_its_end_or_its_limit_is_finished_and_waits_for_nothing() -> None:
    ended = CronTrigger(HOURLY, end_ms=T + 30 * MIN).start("{}", now_ms=T + 1)
    assert (ended.due_ms, ended.occurrence_ms) == (NEVER_MS, NEVER_MS)
    assert isinstance(ended.trigger, CronTrigger) and ended.trigger.finished
    spent = CronTrigger(HOURLY, limit=3, run_count=3).waiting_for("{}", T + HOUR)
    assert isinstance(spent.trigger, CronTrigger) and spent.trigger.finished
    # A paused schedule is paused, whatever its end; resumed, it is finished.
    paused = CronTrigger(HOURLY, end_ms=T, paused=True).start("{}", now_ms=T + 1)
    assert isinstance(paused.trigger, CronTrigger) and not paused.trigger.finished
    resumed = replace(paused.trigger, paused=False).start("{}", now_ms=T + 1)
    assert isinstance(resumed.trigger, CronTrigger) and resumed.trigger.finished
    # A later end (declared again) brings it back.
    revived = replace(resumed.trigger, end_ms=T + 2 * HOUR).start("{}", now_ms=T + 1)
    assert revived.due_ms == T + HOUR and not revived.trigger.finished  # type: ignore[attr-defined]


def test_an_immediate_run_is_due_at_once_or_at_a_later_start() -> None:
    now = T + 17 * MIN
    nxt = CronTrigger(HOURLY).start("{}", now_ms=now, immediately=True)
    assert (nxt.due_ms, nxt.occurrence_ms) == (now, now)
    assert isinstance(nxt.trigger, CronTrigger) and nxt.trigger.immediate
    later = CronTrigger(HOURLY, start_ms=T + 3 * HOUR).start("{}", now_ms=now, immediately=True)
    assert later.due_ms == T + 3 * HOUR
    gone = CronTrigger(HOURLY, end_ms=T).start("{}", now_ms=now, immediately=True)
    assert gone.due_ms == NEVER_MS  # past its end: not even the immediate run


def test_upcoming_ticks_stop_at_the_end_and_the_limit() -> None:
    spec = CronTrigger(HOURLY, end_ms=T + 4 * HOUR, limit=10, run_count=7)
    assert spec.upcoming(T + HOUR, T, 10, running=False) == [T + HOUR, T + 2 * HOUR, T + 3 * HOUR]
    assert spec.upcoming(T + HOUR, T + HOUR, 10, running=True) == [T + 2 * HOUR, T + 3 * HOUR]
    assert replace(spec, end_ms=None).upcoming(T, T, 10, running=False) == [
        T,
        T + HOUR,
        T + 2 * HOUR,
    ]
    assert replace(spec, paused=True).upcoming(T, T, 3, running=False) == []


def test_grace_sets_how_late_a_tick_may_start() -> None:
    late = T + 5 * MIN
    assert plan_claim(CronTrigger(HOURLY), T, late).run_ms is None  # a minute by default
    assert plan_claim(CronTrigger(HOURLY, grace_ms=10 * MIN), T, late).run_ms == T
    # Never past the next tick: a grace longer than the period is cut to it, so the tick
    # before the one due runs no more.
    plan = plan_claim(CronTrigger(HOURLY, grace_ms=3 * HOUR), T, T + HOUR + 5 * MIN)
    assert (plan.run_ms, plan.missed) == (T + HOUR, [T])
