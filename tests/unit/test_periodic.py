"""The periodic trigger kind: which occurrence a claim runs, and what follows it."""

from __future__ import annotations

import logging
from typing import Any

import pytest

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

    async def call(self, occurrence_ms: int) -> Exception | None:
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
