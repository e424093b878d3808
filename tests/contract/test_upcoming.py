"""A task's coming runs on each store: calendar series as a worker runs them, their limit,
``next_occurrences`` and ``run_now``."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

import duetime
from duetime.clock import epoch_ms, from_ms
from duetime.stores.base import NewTask
from duetime.testing import harness
from tests.helpers import record_text

MADRID = ZoneInfo("Europe/Madrid")
DAY = timedelta(days=1)


def recording(app: duetime.App, name: str) -> list[datetime]:
    """A handler of ``name`` that notes each occurrence it runs (its due time)."""
    dues: list[datetime] = []

    @app.task(name)
    async def handler(payload: dict[str, Any], ctx: duetime.Context) -> None:
        dues.append(ctx.due)

    return dues


async def test_next_occurrences_are_what_runs_a_monthly_series_to_its_limit(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    dues = recording(app, "reminder")
    first = datetime(2031, 1, 31, 9, 0, tzinfo=MADRID)
    monthly = duetime.CalendarInterval(months=1, tz="Europe/Madrid")
    async with harness(app, url=store_url, start=first - DAY) as h:
        await app.schedule("reminder", "s1", at=first, every=monthly, limit=14)
        predicted = await app.next_occurrences("reminder", "s1", 20)
        while await app.get("reminder", "s1") is not None:
            info = await app.get("reminder", "s1")
            assert info is not None and info.due is not None
            h.advance(info.due - h.now)
            await h.run_due()
        assert await app.get("reminder", "s1") is None  # ended at its limit

    assert len(predicted) == 14
    assert dues == predicted
    assert [d.astimezone(MADRID).strftime("%m-%d %H:%M") for d in dues] == [
        "01-31 09:00", "02-28 09:00", "03-31 09:00", "04-30 09:00", "05-31 09:00",
        "06-30 09:00", "07-31 09:00", "08-31 09:00", "09-30 09:00", "10-31 09:00",
        "11-30 09:00", "12-31 09:00", "01-31 09:00", "02-29 09:00",
    ]  # fmt: skip
    assert all(d.tzinfo == MADRID for d in predicted)


NEW_YORK = ZoneInfo("America/New_York")


@pytest.mark.parametrize(
    ("first", "expected"),
    [
        pytest.param(
            datetime(2025, 3, 8, 2, 30, tzinfo=NEW_YORK),
            ["2025-03-08T02:30:00-05:00", "2025-03-09T03:00:00-04:00", "2025-03-10T02:30:00-04:00"],
            id="spring forward: 02:30 does not exist, runs at the jump",
        ),
        pytest.param(
            datetime(2025, 11, 1, 1, 30, tzinfo=NEW_YORK),
            ["2025-11-01T01:30:00-04:00", "2025-11-02T01:30:00-04:00", "2025-11-03T01:30:00-05:00"],
            id="fall back: 01:30 happens twice, runs once at the first",
        ),
    ],
)
async def test_a_daily_series_runs_once_a_day_at_its_local_time_across_a_change_of_the_clocks(
    store_url: str, namespace: str, first: datetime, expected: list[str]
) -> None:
    app = duetime.App(namespace=namespace)
    dues = recording(app, "reminder")
    daily = duetime.CalendarInterval(days=1, tz="America/New_York")
    async with harness(app, url=store_url, start=first - timedelta(hours=1)) as h:
        await app.schedule("reminder", "d", at=first, every=daily)
        predicted = await app.next_occurrences("reminder", "d", 3)
        # To a millisecond before each predicted occurrence, then to it: an occurrence at any
        # other time runs at the next step, and shows in the dues (a run_due runs what is
        # due by now); then past the third by a day less an hour.
        for moment in predicted:
            h.clock.set(epoch_ms(moment) - 1)
            await h.run_due()
            h.clock.set(epoch_ms(moment))
            await h.run_due()
        h.advance(timedelta(hours=23))
        await h.run_due()

    assert [d.astimezone(NEW_YORK).isoformat() for d in dues] == expected
    # Compared as instants: Python never finds a time of the repeated hour equal to one of
    # another zone (PEP 495), whichever instant it is.
    assert [epoch_ms(d) for d in predicted] == [epoch_ms(d) for d in dues]


async def test_run_now_runs_the_next_occurrence_now_and_the_series_keeps_its_phase(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    dues = recording(app, "reminder")
    monday = datetime(2031, 3, 10, 9, 0, tzinfo=MADRID)
    weekly = duetime.CalendarInterval(weeks=1, tz="Europe/Madrid")
    async with harness(app, url=store_url, start=monday - 3 * DAY) as h:
        await app.schedule("reminder", "w", at=monday, every=weekly)
        assert await app.run_now("reminder", "w") == h.now
        runs = await h.run_due()
        info = await app.get("reminder", "w")
        upcoming = await app.next_occurrences("reminder", "w", 2)

    assert [r.task_id for r in runs] == ["w"]
    assert dues == [monday]  # the occurrence of Monday, run on Friday
    assert info is not None and info.due == monday + 7 * DAY
    assert upcoming == [monday + 7 * DAY, monday + 14 * DAY]


async def test_run_now_makes_a_one_off_task_due_now(store_url: str, namespace: str) -> None:
    app = duetime.App(namespace=namespace)
    recording(app, "mail")
    async with harness(app, url=store_url) as h:
        later = h.now + timedelta(hours=5)
        await app.schedule("mail", "m", at=later)
        assert await app.next_occurrences("mail", "m", 3) == [later]
        assert await app.run_now("mail", "m") == h.now
        runs = await h.run_due()
        assert [(r.task_id, r.outcome) for r in runs] == [("m", "done")]
        with pytest.raises(duetime.TaskNotFound):
            await app.run_now("mail", "m")  # it ran: nothing waits
        with pytest.raises(duetime.TaskNotFound):
            await app.next_occurrences("mail", "m", 1)


async def test_run_now_moves_only_a_waiting_task(app: duetime.App) -> None:
    store = await app.open()
    now = await app.now_ms()
    await app.schedule("mail", "m", at=from_ms(now), every=timedelta(hours=1))
    (claim,) = (
        await store.claim(
            "mail", now_ms=now, limit=1, lease_ms=60_000, max_stalls=3, at_most_once=False
        )
    ).claims
    with pytest.raises(duetime.TaskNotFound):
        await app.run_now("mail", "m")
    info = await app.get("mail", "m")
    assert info is not None and info.state == "running"
    # A running series lists the occurrences after the one it runs.
    assert await app.next_occurrences("mail", "m", 2) == [
        from_ms(now + 3_600_000),
        from_ms(now + 7_200_000),
    ]
    assert claim.id == "m"


async def test_run_now_keeps_the_phase_of_a_series_written_by_an_earlier_version(
    store_url: str, namespace: str
) -> None:
    """Before calendar intervals, a series' record did not name the occurrence it waits
    for: run_now names it before moving the due time."""
    app = duetime.App(namespace=namespace)
    dues = recording(app, "reminder")
    async with harness(app, url=store_url) as h:
        due = epoch_ms(h.now) + 3_600_000
        store = await app.open()
        await store.schedule("reminder", [NewTask("old", due, record_text(every_ms=86_400_000))])
        await app.run_now("reminder", "old")
        await h.run_due()
        info = await app.get("reminder", "old")

    assert dues == [from_ms(due)]
    assert info is not None and info.due == from_ms(due + 86_400_000)


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 2.5}, "limit"),
        ({"limit": 3, "every": None}, "limit"),
        ({"every": "weekly"}, "every"),
    ],
)
async def test_a_bad_limit_or_interval_is_refused_and_nothing_is_written(
    app: duetime.App, options: dict[str, Any], field: str
) -> None:
    given: dict[str, Any] = {"every": duetime.CalendarInterval(days=1), **options}
    with pytest.raises(duetime.ValidationError) as caught:
        await app.schedule("mail", "bad", **given)
    assert caught.value.field == field
    assert await app.get("mail", "bad") is None


async def test_a_failed_calendar_occurrence_is_filed_under_its_id_and_counts_toward_the_limit(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    dues: list[datetime] = []

    @app.task("reminder", retries=0)
    async def reminder(payload: dict[str, Any], ctx: duetime.Context) -> None:
        dues.append(ctx.due)
        if len(dues) == 1:
            raise RuntimeError("the first one fails")

    first = datetime(2031, 1, 31, 9, 0, tzinfo=MADRID)
    monthly = duetime.CalendarInterval(months=1, tz="Europe/Madrid")
    async with harness(app, url=store_url, start=first) as h:
        await app.schedule("reminder", "s", at=first, every=monthly, limit=2)
        await h.run_due()
        dead = await app.list("reminder", "dead")
        upcoming = await app.next_occurrences("reminder", "s", 5)
        h.advance(datetime(2031, 2, 28, 9, 0, tzinfo=MADRID) - h.now)
        await h.run_due()
        ended = await app.get("reminder", "s")

    assert [d.task_id for d in dead] == [f"s@{epoch_ms(first)}"]
    assert upcoming == [datetime(2031, 2, 28, 9, 0, tzinfo=MADRID)]  # one left of two
    assert dues == [first, upcoming[0]] and ended is None
