"""Calendar intervals: month ends, daylight saving time in Madrid and New York, folding, the
record, and the refusals at the door."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

import duetime
from duetime.clock import epoch_ms, from_ms
from duetime.interval import CalendarInterval, CalendarSeries, instant
from duetime.record import Record
from duetime.triggers.periodic import Due, Periodic

MADRID, NEW_YORK = ZoneInfo("Europe/Madrid"), ZoneInfo("America/New_York")


def series(interval: CalendarInterval, first: datetime) -> Periodic:
    """A periodic trigger as ``App.schedule(at=first, every=interval)`` writes it."""
    first_ms = epoch_ms(first)
    return Periodic(86_400_000, None, CalendarSeries.starting(interval, first_ms))


def walk(trigger: Periodic, first: datetime, count: int) -> list[str]:
    """The first ``count`` occurrences as a worker reaches them, one run after the other
    (each run on time), shown in the series' zone."""
    due = epoch_ms(first)
    out = [due]
    while len(out) < count:
        following = trigger.next_after(due, now_ms=due)
        assert following is not None and following.skipped == 0
        due = following.due_ms
        out.append(due)
    zone = trigger.zone()
    return [from_ms(t).astimezone(zone).isoformat() for t in out]


# -- month ends ---------------------------------------------------------------------------


def test_month_steps_count_from_the_first_occurrence_and_clamp_to_the_month_end() -> None:
    first = datetime(2024, 1, 31, 9, 0, tzinfo=MADRID)
    shown = walk(series(CalendarInterval(months=1, tz="Europe/Madrid"), first), first, 25)
    assert [s[:10] for s in shown] == [
        "2024-01-31", "2024-02-29", "2024-03-31", "2024-04-30", "2024-05-31", "2024-06-30",
        "2024-07-31", "2024-08-31", "2024-09-30", "2024-10-31", "2024-11-30", "2024-12-31",
        "2025-01-31", "2025-02-28", "2025-03-31", "2025-04-30", "2025-05-31", "2025-06-30",
        "2025-07-31", "2025-08-31", "2025-09-30", "2025-10-31", "2025-11-30", "2025-12-31",
        "2026-01-31",
    ]  # fmt: skip
    assert {s[10:19] for s in shown} == {"T09:00:00"}  # in winter and in summer time


def test_quarters_and_leap_days_keep_their_day_where_the_month_has_it() -> None:
    first = datetime(2023, 11, 30, 18, 15, tzinfo=UTC)
    quarterly = walk(series(CalendarInterval(months=3), first), first, 6)
    assert [s[:10] for s in quarterly] == [
        "2023-11-30", "2024-02-29", "2024-05-30", "2024-08-30", "2024-11-30", "2025-02-28",
    ]  # fmt: skip
    leap = datetime(2024, 2, 29, 7, tzinfo=UTC)
    yearly = walk(series(CalendarInterval(years=1), leap), leap, 5)
    assert [s[:10] for s in yearly] == [
        "2024-02-29", "2025-02-28", "2026-02-28", "2027-02-28", "2028-02-29",
    ]  # fmt: skip


# -- daylight saving time -----------------------------------------------------------------

DST_DAYS = [
    # zone, the first occurrence (local), the interval, what follows (local, with offsets)
    pytest.param(
        "Europe/Madrid",
        datetime(2025, 3, 28, 2, 30),
        CalendarInterval(days=1, tz="Europe/Madrid"),
        ["2025-03-29T02:30:00+01:00", "2025-03-30T03:00:00+02:00", "2025-03-31T02:30:00+02:00"],
        id="madrid spring forward: 02:30 does not exist, runs at the jump",
    ),
    pytest.param(
        "Europe/Madrid",
        datetime(2025, 10, 24, 2, 30),
        CalendarInterval(days=1, tz="Europe/Madrid"),
        ["2025-10-25T02:30:00+02:00", "2025-10-26T02:30:00+02:00", "2025-10-27T02:30:00+01:00"],
        id="madrid fall back: 02:30 happens twice, runs once at the first",
    ),
    pytest.param(
        "America/New_York",
        datetime(2025, 3, 7, 2, 30),
        CalendarInterval(days=1, tz="America/New_York"),
        ["2025-03-08T02:30:00-05:00", "2025-03-09T03:00:00-04:00", "2025-03-10T02:30:00-04:00"],
        id="new york spring forward: 02:30 does not exist, runs at the jump",
    ),
    pytest.param(
        "America/New_York",
        datetime(2025, 10, 31, 1, 30),
        CalendarInterval(days=1, tz="America/New_York"),
        ["2025-11-01T01:30:00-04:00", "2025-11-02T01:30:00-04:00", "2025-11-03T01:30:00-05:00"],
        id="new york fall back: 01:30 happens twice, runs once at the first",
    ),
    pytest.param(
        "Europe/Madrid",
        datetime(2025, 3, 16, 9, 0),
        CalendarInterval(weeks=1, tz="Europe/Madrid"),
        ["2025-03-23T09:00:00+01:00", "2025-03-30T09:00:00+02:00", "2025-04-06T09:00:00+02:00"],
        id="madrid weekly across spring forward keeps 09:00",
    ),
    pytest.param(
        "America/New_York",
        datetime(2025, 10, 19, 9, 0),
        CalendarInterval(weeks=1, tz="America/New_York"),
        ["2025-10-26T09:00:00-04:00", "2025-11-02T09:00:00-05:00", "2025-11-09T09:00:00-05:00"],
        id="new york weekly across fall back keeps 09:00",
    ),
]


@pytest.mark.parametrize(("tz", "first", "interval", "expected"), DST_DAYS)
def test_each_wall_clock_time_runs_once_across_daylight_saving_time(
    tz: str, first: datetime, interval: CalendarInterval, expected: list[str]
) -> None:
    start = first.replace(tzinfo=ZoneInfo(tz))
    assert walk(series(interval, start), start, 4)[1:] == expected


def test_a_fixed_week_drifts_an_hour_where_a_calendar_week_does_not() -> None:
    """The seed's bug: ``every=timedelta(days=7)`` is a duration, so 09:00 becomes 10:00."""
    first = datetime(2025, 3, 23, 9, 0, tzinfo=MADRID)
    fixed = Periodic(7 * 86_400_000).next_after(epoch_ms(first), epoch_ms(first))
    assert fixed is not None
    assert from_ms(fixed.due_ms).astimezone(MADRID).hour == 10
    (_, calendar) = walk(series(CalendarInterval(weeks=1, tz="Europe/Madrid"), first), first, 2)
    assert calendar == "2025-03-30T09:00:00+02:00"


def test_a_first_occurrence_at_the_repeated_hour_keeps_its_wall_clock_time() -> None:
    # 01:30 EST, the second 01:30 of the fall-back day in New York.
    first = datetime(2025, 11, 2, 1, 30, fold=1, tzinfo=NEW_YORK)
    shown = walk(series(CalendarInterval(days=1, tz="America/New_York"), first), first, 3)
    assert shown == [
        "2025-11-02T01:30:00-05:00",
        "2025-11-03T01:30:00-05:00",
        "2025-11-04T01:30:00-05:00",
    ]


def test_the_moment_of_the_jump_is_found_to_the_millisecond() -> None:
    # Lord Howe Island moves its clocks by half an hour, at 02:00 local.
    zone = ZoneInfo("Australia/Lord_Howe")
    jump = instant(datetime(2025, 10, 5, 2, 10), zone)
    assert from_ms(jump).astimezone(zone).isoformat() == "2025-10-05T02:30:00+11:00"
    assert from_ms(jump - 1).astimezone(zone).isoformat(timespec="milliseconds") == (
        "2025-10-05T01:59:59.999+10:30"
    )


# -- what a claim runs --------------------------------------------------------------------


def test_missed_occurrences_fold_into_the_latest_and_the_phase_is_kept() -> None:
    first = datetime(2024, 1, 31, 9, 0, tzinfo=MADRID)
    trigger = series(CalendarInterval(months=1, tz="Europe/Madrid"), first)
    now = epoch_ms(datetime(2024, 7, 2, tzinfo=MADRID))
    latest = trigger.latest_due(epoch_ms(first), now)
    assert from_ms(latest.due_ms).astimezone(MADRID).isoformat() == "2024-06-30T09:00:00+02:00"
    assert latest.skipped == 5
    following = trigger.next_after(latest.due_ms, now)
    assert following is not None
    assert from_ms(following.due_ms).astimezone(MADRID).date().isoformat() == "2024-07-31"
    # The same from the first occurrence, as a run that took months would fold them.
    assert trigger.next_after(epoch_ms(first), now) == Due(latest.due_ms, 4)


def test_until_ends_a_calendar_series_and_a_late_claim_runs_the_last_within_it() -> None:
    first = datetime(2024, 1, 1, 8, tzinfo=UTC)
    trigger = Periodic(
        86_400_000,
        epoch_ms(datetime(2024, 1, 10, 8, tzinfo=UTC)),
        CalendarSeries.starting(CalendarInterval(days=3), epoch_ms(first)),
    )
    latest = trigger.latest_due(epoch_ms(first), epoch_ms(datetime(2024, 3, 1, tzinfo=UTC)))
    assert from_ms(latest.due_ms) == datetime(2024, 1, 10, 8, tzinfo=UTC)
    assert trigger.next_after(latest.due_ms, latest.due_ms) is None


def test_upcoming_folds_the_past_and_stops_at_the_limit() -> None:
    first = datetime(2024, 1, 31, 9, 0, tzinfo=MADRID)
    base = series(CalendarInterval(months=1, tz="Europe/Madrid"), first)
    trigger = Periodic(base.every_ms, None, base.calendar, limit=10, ran=3)
    now = epoch_ms(datetime(2024, 3, 5, tzinfo=MADRID))
    due = trigger.upcoming(epoch_ms(first), now, 20, running=False)
    days = [from_ms(t).astimezone(MADRID).date().isoformat() for t in due]
    assert days == [
        "2024-02-29", "2024-03-31", "2024-04-30", "2024-05-31", "2024-06-30", "2024-07-31",
        "2024-08-31",
    ]  # fmt: skip
    running = trigger.upcoming(epoch_ms(first), epoch_ms(first), 3, running=True)
    assert [from_ms(t).astimezone(MADRID).day for t in running] == [29, 31, 30]


# -- stored and shown ---------------------------------------------------------------------


def test_a_calendar_series_round_trips_in_its_record_and_an_old_record_reads_as_before() -> None:
    first = datetime(2031, 1, 5, 9, 0, tzinfo=MADRID)
    trigger = Periodic(
        604_800_000,
        None,
        CalendarSeries.starting(CalendarInterval(weeks=1, tz="Europe/Madrid"), epoch_ms(first)),
        limit=10,
        ran=2,
    )
    text = Record("{}", trigger, epoch_ms(first)).encode()
    assert text == (
        '{"p":{},"e":604800000,"k":{"w":1,"z":"Europe/Madrid","a":"2031-01-05T09:00:00"},'
        f'"n":10,"r":2,"o":{epoch_ms(first)}}}'
    )
    assert Record.decode(text).trigger == trigger
    assert trigger.shown()["every"] == CalendarInterval(weeks=1, tz="Europe/Madrid")
    old = Record.decode('{"p":{},"e":60000,"u":120000}')
    assert old.trigger == Periodic(60_000, 120_000) and old.occurrence_ms is None


@pytest.mark.parametrize(
    "calendar",
    [
        '"weekly"',
        '{"w":1,"z":"Europe/Madrid"}',
        '{"w":1,"z":"Nowhere/Land","a":"2031-01-05T09:00:00"}',
        '{"w":1,"m":1,"z":"UTC","a":"2031-01-05T09:00:00"}',
        '{"w":1,"z":"UTC","a":"2031-01-05T09:00:00+01:00"}',
        '{"z":"UTC","a":"2031-01-05T09:00:00"}',
    ],
)
def test_a_stored_calendar_that_cannot_be_used_is_bad_data(calendar: str) -> None:
    with pytest.raises(duetime.SchemaError, match="'k'"):
        Record.decode('{"p":{},"e":60000,"k":' + calendar + "}")


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({}, "every"),
        ({"days": 0, "months": 0}, "every"),
        ({"days": 1, "months": 1}, "every"),
        ({"weeks": 2, "years": 1}, "every"),
        ({"days": -1}, "days"),
        ({"weeks": 1.5}, "weeks"),
        ({"months": True}, "months"),
        ({"years": 10_000}, "every"),
        ({"days": 1, "tz": "Nowhere/Land"}, "tz"),
        ({"days": 1, "tz": ""}, "tz"),
    ],
)
def test_an_interval_that_means_nothing_is_refused_naming_the_field(
    given: dict[str, Any], field: str
) -> None:
    with pytest.raises(duetime.ValidationError) as caught:
        CalendarInterval(**given)
    assert caught.value.field == field


def test_an_interval_reads_as_people_write_it() -> None:
    assert str(CalendarInterval(days=1, weeks=2, tz="Europe/Madrid")) == (
        "1 day 2 weeks in Europe/Madrid"
    )
    assert str(CalendarInterval(years=1)) == "1 year in UTC"
    assert CalendarInterval(days=7).step_days == CalendarInterval(weeks=1).step_days == 7


def test_the_last_occurrence_before_the_year_10000_ends_the_series() -> None:
    first = datetime(9999, 11, 30, tzinfo=UTC)
    trigger = series(CalendarInterval(months=1), first)
    following = trigger.next_after(epoch_ms(first), epoch_ms(first))
    assert following is not None
    assert from_ms(following.due_ms).date().isoformat() == "9999-12-30"
    assert trigger.next_after(following.due_ms, following.due_ms) is None
    assert first + timedelta(days=30) == from_ms(following.due_ms)
