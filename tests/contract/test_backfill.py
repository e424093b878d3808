"""backfill_cron on each store: every tick of a past range, oldest first, as tasks with the
ticks' occurrence ids; a backfill repeated over the range runs nothing twice, whether its
tasks are pending or done; bad ranges refused, nothing written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

import duetime
from duetime.features.cron import backfill as backfill_module
from duetime.stores.base import NewTask
from tests.helpers import eventually, record_text, running

HOUR = timedelta(hours=1)


def top_of_the_hour() -> datetime:
    return datetime.now(UTC).replace(minute=0, second=0, microsecond=0)


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


async def test_backfill_runs_each_tick_of_the_range_once_oldest_first(
    app: duetime.App,
) -> None:
    seen: list[str] = []

    @app.task("build", concurrency=1)
    async def build(payload: dict[str, str], ctx: duetime.Context) -> None:
        assert payload == {"kind": "sales"}
        seen.append(ctx.occurrence)

    await app.add_cron("hourly", "0 * * * *", task="build", payload={"kind": "sales"})
    now = top_of_the_hour()
    start, end = now - 5 * HOUR, now
    ticks = [f"hourly@{ms(start + n * HOUR)}" for n in range(5)]

    # Twice while pending: the second finds every tick's task there.
    assert await app.backfill_cron("hourly", start=start, end=end) == 5
    assert await app.backfill_cron("hourly", start=start, end=end) == 0
    pending = await app.list("build", "due", limit=10)
    assert [t.task_id for t in pending][:5] == ticks

    async with running(app):
        await eventually(lambda: len(seen) == 5, what="the five ticks")
        await eventually(lambda: _left(app, "build", 1), what="the backfill's tasks settled")
        # Done: the history records each tick, so a third backfill runs nothing either,
        # and one over a wider range only what is new.
        assert await app.backfill_cron("hourly", start=start, end=end) == 0
        assert await app.backfill_cron("hourly", start=start - HOUR, end=end) == 1
        await eventually(lambda: len(seen) == 6, what="the one new tick")
        await eventually(lambda: _left(app, "build", 1), what="the new tick's task settled")
    assert seen == [*ticks, f"hourly@{ms(start - HOUR)}"]  # oldest first, each once
    (info,) = await app.crons()
    assert info.next_run is not None and info.next_run > now  # its own ticks go on


async def _left(app: duetime.App, task_type: str, n: int) -> bool:
    counts = await app.counts(task_type)
    return counts["due"] + counts["running"] == n  # the schedule's own task


async def test_a_declared_schedule_not_yet_stored_is_backfilled(app: duetime.App) -> None:
    @app.cron("0 0 * * *", name="nightly")
    async def nightly(ctx: duetime.Context) -> None:
        pass

    midnight = top_of_the_hour().replace(hour=0)
    assert await app.backfill_cron("nightly", start=midnight - 3 * 24 * HOUR, end=midnight) == 3
    assert [t.task_id for t in await app.list("nightly", "due")] == [
        f"nightly@{ms(midnight - d * 24 * HOUR)}" for d in (3, 2, 1)
    ]


async def test_a_bad_backfill_is_refused_naming_the_field_and_writes_nothing(
    app: duetime.App, monkeypatch: pytest.MonkeyPatch
) -> None:
    app.declare("build")
    await app.add_cron("minutely", "* * * * *", task="build")
    now = top_of_the_hour()
    before = await app.counts("build")  # the schedule itself
    cases: list[tuple[object, object, str]] = [
        (now, now - HOUR, "end"),  # reversed
        (now, now, "end"),  # empty
        (now - timedelta(minutes=10_001), now, "end"),  # more than 10,000 ticks
        (now.replace(tzinfo=None), now, "start"),  # naive
        ("yesterday", now, "start"),
    ]
    for start, end, field in cases:
        with pytest.raises(duetime.ValidationError) as caught:
            await app.backfill_cron("minutely", start=start, end=end)  # type: ignore[arg-type]
        assert caught.value.field == field, (start, end)
    # The bound itself, at a smaller one: the bound is the feature's, not the store's, and
    # writing 10,000 tasks took up to a minute a store.
    monkeypatch.setattr(backfill_module, "MAX_BACKFILL", 50)
    with pytest.raises(duetime.ValidationError) as caught:
        await app.backfill_cron("minutely", start=now - timedelta(minutes=51), end=now)
    assert caught.value.field == "end" and "more than 50 ticks" in str(caught.value)
    assert await app.counts("build") == before  # nothing written
    assert await app.backfill_cron("minutely", start=now - timedelta(minutes=50), end=now) == 50
    await app.cancel("build", "minutely")
    with pytest.raises(duetime.ScheduleNotFound):
        await app.backfill_cron("nope", start=now - HOUR, end=now)


async def test_a_tick_another_task_holds_is_left_alone(app: duetime.App) -> None:
    app.declare("build")
    await app.add_cron("hourly", "0 * * * *", task="build")
    now = top_of_the_hour()
    first = f"hourly@{ms(now - 2 * HOUR)}"
    # A tick handed off earlier and still waiting, with another payload: left as it is.
    store = await app.open()
    await store.schedule("build", [NewTask(first, ms(now), record_text('{"own":1}'))])
    assert await app.backfill_cron("hourly", start=now - 2 * HOUR, end=now) == 1
    info = await app.get("build", first)
    assert info is not None and info.payload == {"own": 1}
