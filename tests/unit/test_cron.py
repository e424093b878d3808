"""Cron expressions, the daylight-saving contract and the missed-tick policies."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from duetime.errors import ValidationError
from duetime.triggers.cron.expression import parse_cron
from duetime.triggers.cron.policy import MAX_CATCHUP, after_run, next_for_allow, plan_claim
from duetime.triggers.cron.trigger import CronTrigger

MADRID, NEW_YORK, UTC = ZoneInfo("Europe/Madrid"), ZoneInfo("America/New_York"), ZoneInfo("UTC")


def ms(moment: datetime) -> int:
    return round(moment.timestamp() * 1000)


def local(ticks: list[int], zone: ZoneInfo) -> list[str]:
    return [datetime.fromtimestamp(t / 1000, zone).isoformat() for t in ticks]


# -- the daylight-saving contract ---------------------------------------------------------

DST_CASES = [
    # zone, expression, the day before the change, the runs over three days
    (
        MADRID,
        "30 2 * * *",
        datetime(2025, 3, 29, 12, tzinfo=MADRID),  # spring forward
        ["2025-03-30T03:00:00+02:00", "2025-03-31T02:30:00+02:00", "2025-04-01T02:30:00+02:00"],
    ),
    (
        MADRID,
        "30 2 * * *",
        datetime(2025, 10, 25, 12, tzinfo=MADRID),  # fall back
        ["2025-10-26T02:30:00+02:00", "2025-10-27T02:30:00+01:00", "2025-10-28T02:30:00+01:00"],
    ),
    (
        MADRID,
        "30 1 * * *",
        datetime(2025, 10, 25, 12, tzinfo=MADRID),  # 01:30 is not repeated
        ["2025-10-26T01:30:00+02:00", "2025-10-27T01:30:00+01:00", "2025-10-28T01:30:00+01:00"],
    ),
    (
        NEW_YORK,
        "30 2 * * *",
        datetime(2025, 3, 8, 12, tzinfo=NEW_YORK),  # spring forward
        ["2025-03-09T03:00:00-04:00", "2025-03-10T02:30:00-04:00", "2025-03-11T02:30:00-04:00"],
    ),
    (
        NEW_YORK,
        "30 1 * * *",
        datetime(2025, 11, 1, 12, tzinfo=NEW_YORK),  # fall back
        ["2025-11-02T01:30:00-04:00", "2025-11-03T01:30:00-05:00", "2025-11-04T01:30:00-05:00"],
    ),
    (
        NEW_YORK,
        "30 1 * * *",
        datetime(2025, 3, 8, 12, tzinfo=NEW_YORK),  # unaffected
        ["2025-03-09T01:30:00-05:00", "2025-03-10T01:30:00-04:00", "2025-03-11T01:30:00-04:00"],
    ),
]


@pytest.mark.parametrize(("zone", "expression", "start", "expected"), DST_CASES)
def test_each_wall_clock_time_runs_once_a_day_across_dst(
    zone: ZoneInfo, expression: str, start: datetime, expected: list[str]
) -> None:
    ticks = parse_cron(expression, zone.key).ticks(ms(start), 3)
    assert local(ticks, zone) == expected
    days = [datetime.fromtimestamp(t / 1000, zone).date() for t in ticks]
    assert len(set(days)) == 3  # one run per calendar day


def test_hourly_schedules_run_at_every_real_hour_across_fall_back() -> None:
    ticks = parse_cron("0 * * * *", "America/New_York").ticks(
        ms(datetime(2025, 11, 2, 0, 30, tzinfo=NEW_YORK)), 4
    )
    assert local(ticks, NEW_YORK) == [
        "2025-11-02T01:00:00-04:00",
        "2025-11-02T01:00:00-05:00",
        "2025-11-02T02:00:00-05:00",
        "2025-11-02T03:00:00-05:00",
    ]
    assert [b - a for a, b in zip(ticks, ticks[1:], strict=False)] == [3_600_000] * 3


# -- expressions --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "same_as"),
    [
        ("@daily", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
        ("@weekly", "0 0 * * 0"),
        ("@monthly", "0 0 1 * *"),
        ("@yearly", "0 0 1 1 *"),
        ("@midnight", "0 0 * * *"),
        ("0 0 ? * MON", "0 0 * * MON"),
        ("  0   9 *  * 1-5 ", "0 9 * * 1-5"),
    ],
)
def test_aliases_and_spelling_are_normalised(expression: str, same_as: str) -> None:
    after = ms(datetime(2025, 6, 1, tzinfo=UTC))
    assert parse_cron(expression).ticks(after, 5) == parse_cron(same_as).ticks(after, 5)


def test_an_optional_seconds_field_comes_first() -> None:
    ticks = parse_cron("*/15 * * * * *").ticks(ms(datetime(2025, 1, 1, tzinfo=UTC)), 3)
    assert [t % 60_000 for t in ticks] == [15_000, 30_000, 45_000]


def test_the_next_tick_is_strictly_later_to_the_millisecond() -> None:
    expr = parse_cron("* * * * * *")
    assert expr.next_after(1_000) == 2_000
    assert expr.next_after(1_999) == 2_000
    assert expr.next_after(2_000) == 3_000


@pytest.mark.parametrize(
    ("expression", "names"),
    [
        ("61 * * * *", "minute"),
        ("* 25 * * *", "hour"),
        ("* * 32 * *", "day-of-month"),
        ("* * * 13 *", "month"),
        ("* * * * 8", "day-of-week"),
        ("99 * * * * *", "second"),
        ("* * *", "3 fields"),
        ("* * * * * * *", "7 fields"),
        ("", "non-empty"),
    ],
)
def test_an_invalid_expression_names_the_wrong_field(expression: str, names: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_cron(expression)
    assert caught.value.field == "cron" and names in str(caught.value)


def test_an_unknown_time_zone_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        parse_cron("0 0 * * *", "Mars/Olympus_Mons")
    assert caught.value.field == "tz" and "Mars/Olympus_Mons" in str(caught.value)


def test_the_shortest_period_is_found() -> None:
    after = ms(datetime(2025, 1, 1, tzinfo=UTC))
    assert parse_cron("0 9,17 * * *").shortest_period_ms(after) == 8 * 3_600_000
    assert parse_cron("*/10 * * * * *").shortest_period_ms(after) == 10_000


def test_a_spec_round_trips_through_its_stored_form() -> None:
    spec = CronTrigger(
        parse_cron("0 0 1 * *", "Europe/Madrid"), "all", "allow", 30_000, 3_600_000, True, 4, 2
    )
    assert CronTrigger.from_json(spec.to_json()) == spec
    assert CronTrigger.from_json({"x": "@daily", "z": "UTC"}).to_json() == {
        "x": "0 0 * * *",
        "z": "UTC",
    }


# -- missed ticks ---------------------------------------------------------------------------

MINUTELY = parse_cron("* * * * *")  # a tick every minute
DAILY = parse_cron("0 0 * * *")
T = ms(datetime(2030, 1, 1, tzinfo=UTC))  # a midnight
MIN = 60_000
DAY = 86_400_000


def spec(expr: object = DAILY, **options: object) -> CronTrigger:
    return CronTrigger(expr, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("policy", ["skip", "once", "all"])
def test_a_tick_a_little_late_just_runs(policy: str) -> None:
    plan = plan_claim(spec(missed=policy), T, T + 3)
    assert (plan.run_ms, plan.missed, plan.missed_total) == (T, [], 0)


def test_skip_runs_nothing_that_was_missed() -> None:
    plan = plan_claim(spec(missed="skip"), T, T + 2 * DAY + 9 * 3_600_000)  # down 2 days 9 h
    assert plan.run_ms is None
    assert plan.missed == [T, T + DAY, T + 2 * DAY] and plan.missed_total == 3
    assert plan.next_ms == T + 3 * DAY


def test_skip_still_runs_the_current_tick_after_missed_ones() -> None:
    plan = plan_claim(spec(missed="skip"), T, T + 2 * DAY + 5_000)  # 5 s after a tick
    assert plan.run_ms == T + 2 * DAY and plan.missed == [T, T + DAY]


def test_once_runs_one_catch_up_for_every_missed_tick() -> None:
    plan = plan_claim(spec(missed="once"), T, T + 2 * DAY + 9 * 3_600_000)
    assert plan.run_ms == T + 2 * DAY and plan.missed == [T, T + DAY] and plan.missed_total == 2


def test_once_respects_the_catch_up_window() -> None:
    plan = plan_claim(spec(missed="once", catchup_ms=3_600_000), T, T + 9 * 3_600_000)
    assert plan.run_ms is None and plan.missed == [T]


def test_all_runs_each_missed_tick_in_turn_oldest_first() -> None:
    first = plan_claim(spec(missed="all"), T, T + 2 * DAY + 1)
    assert (first.run_ms, first.missed) == (T, [])
    # After the run at T, the next claim is for the tick after it, still in the past.
    following, skipped = after_run(spec(missed="all"), T, T + 2 * DAY + 1, T + 2 * DAY + 5)
    assert (following, skipped) == (T + DAY, 0)


def test_all_is_bounded_and_windowed() -> None:
    late = plan_claim(spec(MINUTELY, missed="all"), T, T + 500 * MIN)
    assert late.run_ms == T + (500 - MAX_CATCHUP + 1) * MIN
    assert late.missed_total == 501 - MAX_CATCHUP
    windowed = plan_claim(spec(MINUTELY, missed="all", catchup_ms=10 * MIN), T, T + 500 * MIN)
    assert windowed.run_ms == T + 490 * MIN and windowed.missed_total == 490


def test_a_huge_gap_is_counted_without_walking_every_tick() -> None:
    every_second = parse_cron("* * * * * *")
    plan = plan_claim(spec(every_second, missed="skip"), T, T + 30 * DAY)
    assert plan.missed_total >= 2_000_000 and len(plan.missed) <= MAX_CATCHUP + 1


def test_ticks_that_came_due_during_a_run_are_skipped() -> None:
    nxt, skipped = after_run(spec(MINUTELY), T, T + 10, T + 3 * MIN + 10)
    assert (nxt, skipped) == (T + 4 * MIN, 3)
    nxt, skipped = after_run(spec(MINUTELY), T, T + 10, T + 20)
    assert (nxt, skipped) == (T + MIN, 0)


def test_overlap_allow_moves_on_at_once() -> None:
    assert next_for_allow(spec(MINUTELY), T, T + 5) == T + MIN
    assert next_for_allow(spec(MINUTELY, missed="all"), T, T + 3 * MIN) == T + MIN


# -- a crashed tick (a claim with stalls) ---------------------------------------------------

EVERY_SECOND = parse_cron("* * * * * *")
S = 1_000


@pytest.mark.parametrize("policy", ["skip", "once", "all"])
def test_a_crashed_tick_runs_again_however_late(policy: str) -> None:
    # A tick every second, a 30 s lease: the crashed run's lease held the schedule 31 s.
    plan = plan_claim(spec(EVERY_SECOND, missed=policy), T, T + 31 * S, stalls=1)
    assert (plan.run_ms, plan.missed, plan.missed_total, plan.again) == (T, [], 0, True)
    # A daily tick, crashed and claimed again two days later (every worker was down).
    plan = plan_claim(spec(missed=policy), T, T + 2 * DAY, stalls=2)
    assert (plan.run_ms, plan.missed_total, plan.again) == (T, 0, True)


def test_without_stalls_the_same_claim_gives_the_crashed_tick_up() -> None:
    plan = plan_claim(spec(EVERY_SECOND), T, T + 31 * S)
    assert plan.run_ms == T + 31 * S and T in plan.missed and not plan.again


@pytest.mark.parametrize("policy", ["skip", "once", "all"])
def test_after_a_re_run_the_schedule_goes_on_from_the_tick_after_the_crashed_one(
    policy: str,
) -> None:
    every = spec(EVERY_SECOND, missed=policy)
    # Run again from T+31 s to T+33.5 s: the ticks since T wait behind it, due at once.
    assert after_run(every, T, T + 31 * S, T + 33 * S + 500, again=True) == (T + S, 0)
    # The next claim plans them like any late ticks, under the missed policy.
    late = plan_claim(every, T + S, T + 33 * S + 600)
    expected = {
        "skip": (T + 33 * S, 32),  # the current tick, merely late, runs; the rest missed
        "once": (T + 33 * S, 32),  # one catch-up, standing for all of them
        "all": (T + S, 0),  # each in turn, oldest first
    }[policy]
    assert (late.run_ms, late.missed_total) == expected
    assert late.missed == [T + n * S for n in range(1, 1 + late.missed_total)]


def test_ticks_that_came_due_during_a_re_run_alone_are_skipped_as_overlaps() -> None:
    # A tick every minute, a 30 s lease: nothing came due while the lease held, so the re-run
    # is like any run and the tick that comes due while it runs is skipped (overlap="skip").
    assert after_run(spec(MINUTELY), T, T + 31 * S, T + 40 * S, again=True) == (T + MIN, 0)
    assert after_run(spec(MINUTELY), T, T + 31 * S, T + 70 * S, again=True) == (T + 2 * MIN, 1)


def test_overlap_allow_hands_off_the_crashed_tick_then_plans_the_ticks_since() -> None:
    assert next_for_allow(spec(EVERY_SECOND), T, T + 31 * S, again=True) == T + S
    assert next_for_allow(spec(EVERY_SECOND), T, T + 31 * S) == T + 32 * S
    assert next_for_allow(spec(MINUTELY), T, T + 31 * S, again=True) == T + MIN


def test_the_readme_example_of_a_crash() -> None:
    # */5 s, a 30 s lease, a 2 s handler killed 1 s into the 12:00:00 run.
    every_5s = spec(parse_cron("*/5 * * * * *"))
    rerun_at = T + 30 * S + 200
    plan = plan_claim(every_5s, T, rerun_at, stalls=1)
    assert (plan.run_ms, plan.again) == (T, True)
    waiting, skipped = after_run(every_5s, T, rerun_at, rerun_at + 2 * S, again=True)
    assert (waiting, skipped) == (T + 5 * S, 0)
    late = plan_claim(every_5s, waiting, rerun_at + 2 * S + 10)
    assert late.run_ms == T + 30 * S
    assert late.missed == [T + n * S for n in (5, 10, 15, 20, 25)]
