"""The periodic trigger kind: which occurrence a claim runs, and what follows it."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from duetime.clock import epoch_ms, from_ms
from duetime.interval import CalendarInterval, CalendarSeries
from duetime.model import Reschedule
from duetime.record import Record
from duetime.stores.base import Claim, Outcome
from duetime.triggers.base import Follow, Next, Trigger
from duetime.triggers.periodic import Due, Periodic
from duetime.worker import outcome

MINUTE = 60_000
#: 2020-01-01T00:00:00Z and about six years later, as epoch ms.
Y2020 = 1_577_836_800_000
NOW = Y2020 + 3_638_277 * MINUTE + 1234


class FakeJob:
    """The Job a worker offers a trigger, with a handler that notes the occurrences it
    runs and never fails."""

    def __init__(self, series: Periodic, due_ms: int, now_ms: int, **record: Any) -> None:
        self.record = Record("{}", series, **record)
        self.claim = Claim("t", 1, 0, due_ms, self.record.encode())
        self.task_name = "report"
        self.payload_json = "{}"
        self.payload: dict[str, Any] = {}
        self.failures = self.record.failures
        self.occurrence_ms = self.record.occurrence_ms or due_ms
        self.max_payload_bytes = 1000
        self.has_hook = False
        self.result: object = None
        self.now = now_ms
        self.ran: list[int] = []

    def now_ms(self) -> int:
        return self.now

    async def call(self, occurrence_ms: int, *, abort_at_ms: int | None = None) -> Exception | None:
        self.ran.append(occurrence_ms)
        return None

    async def ask_hook(self, payload: dict[str, Any]) -> object:
        return None

    def done(self, following: Next | None = None, *, hand_off_ms: int | None = None) -> Outcome:
        return outcome.success(self.claim, following)

    async def failed(
        self, error: Exception, occurrence_ms: int, state: Trigger | None, follow: Follow | None
    ) -> Outcome:
        raise AssertionError("the handler does not fail")

    def missed_ticks(self, latest_ms: int, count: int) -> None: ...

    def tell(self, kind: Any, **fields: Any) -> None: ...


def test_a_claim_in_time_runs_its_own_occurrence() -> None:
    series = Periodic(MINUTE)
    assert series.latest_due(Y2020, Y2020 + MINUTE - 1) == Due(Y2020, 0)


def test_a_late_claim_runs_the_latest_occurrence_due_keeping_the_phase() -> None:
    latest = Periodic(MINUTE).latest_due(Y2020, NOW)
    assert latest.due_ms == Y2020 + 3_638_277 * MINUTE <= NOW
    assert latest.skipped == 3_638_277
    assert Periodic(MINUTE).latest_due(Y2020, Y2020 + MINUTE) == Due(Y2020 + MINUTE, 1)


def test_a_late_claim_past_until_runs_the_last_occurrence_within_it() -> None:
    series = Periodic(MINUTE, until_ms=Y2020 + 10 * MINUTE + 5)
    assert series.latest_due(Y2020, NOW) == Due(Y2020 + 10 * MINUTE, 10)
    assert series.next_after(Y2020 + 10 * MINUTE, NOW) is None  # and the series ends


async def test_a_series_due_years_ago_runs_once_now_and_next_in_the_future(
    caplog: pytest.LogCaptureFixture,
) -> None:
    job = FakeJob(Periodic(MINUTE), Y2020, NOW)
    with caplog.at_level(logging.WARNING, "duetime.triggers.periodic"):
        result = await Periodic(MINUTE).run(job)

    assert job.ran == [Y2020 + 3_638_277 * MINUTE]
    assert result.op == "next" and result.due_ms is not None
    assert NOW < result.due_ms <= NOW + MINUTE
    assert result.due_ms == Y2020 + 3_638_278 * MINUTE  # the phase is kept
    skipped = [r.getMessage() for r in caplog.records if "missed occurrences" in r.message]
    assert skipped == ["report/t: 3638277 missed occurrences skipped; the latest runs now"]


async def test_a_retry_keeps_its_occurrence() -> None:
    job = FakeJob(Periodic(MINUTE), NOW - 5, NOW, occurrence_ms=Y2020, failures=1)
    result = await Periodic(MINUTE).run(job)
    assert job.ran == [Y2020]
    assert result.due_ms == Y2020 + 3_638_277 * MINUTE  # then what is due folds into one


async def test_a_series_with_a_limit_counts_its_runs_in_the_record_and_ends_at_the_limit() -> None:
    series = Periodic(MINUTE, limit=3)
    first = await series.run(FakeJob(series, Y2020, Y2020))
    assert first.op == "next" and first.due_ms == Y2020 + MINUTE
    second_state = Record.decode(first.record)
    assert second_state.trigger == Periodic(MINUTE, limit=3, ran=1)
    assert second_state.occurrence_ms == Y2020 + MINUTE  # the occurrence it waits for
    third = Periodic(MINUTE, limit=3, ran=2)
    assert (await third.run(FakeJob(third, Y2020 + 2 * MINUTE, Y2020 + 2 * MINUTE))).op == "done"


class HookedJob(FakeJob):
    """A job whose type's reschedule hook moves the next occurrence to ``at``."""

    def __init__(self, series: Periodic, due_ms: int, at: datetime) -> None:
        super().__init__(series, due_ms, due_ms)
        self.has_hook = True
        self.at = at

    async def ask_hook(self, payload: dict[str, Any]) -> object:
        return Reschedule(at=self.at)


async def test_a_hook_that_moves_a_calendar_occurrence_moves_the_series_wall_clock_time() -> None:
    madrid = ZoneInfo("Europe/Madrid")
    first = datetime(2025, 3, 3, 9, 0, tzinfo=madrid)
    interval = CalendarInterval(weeks=1, tz="Europe/Madrid")
    series = Periodic(7 * 1440 * MINUTE, None, CalendarSeries.starting(interval, epoch_ms(first)))
    moved = datetime(2025, 3, 11, 17, 30, tzinfo=madrid)
    result = await series.run(HookedJob(series, epoch_ms(first), moved))
    assert result.due_ms == epoch_ms(moved)
    following = Record.decode(result.record).trigger
    assert isinstance(following, Periodic) and following.calendar is not None
    after = following.next_after(epoch_ms(moved), epoch_ms(moved))
    assert after is not None  # a week after the moved one, at its time of day
    assert from_ms(after.due_ms).astimezone(madrid).isoformat() == "2025-03-18T17:30:00+01:00"
