"""Clocks: the store clock follows the store, not this machine's wall clock."""

from __future__ import annotations

import asyncio
import time

import pytest

from duetime import ManualClock, StoreClock
from duetime.clock import MAX_MS, iso


async def test_the_store_clock_is_anchored_to_the_store_and_advances_monotonically(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store_now = 5_000_000.0

    async def read() -> float:
        return store_now

    clock = StoreClock(read)
    assert clock.stale()
    with pytest.raises(RuntimeError):
        clock.now_ms()
    await clock.sync()

    # This machine's wall clock jumps by an hour: the store clock does not care.
    monkeypatch.setattr(time, "time", lambda: 10**12)
    first = clock.now_ms()
    await asyncio.sleep(0.02)
    second = clock.now_ms()
    assert 5_000_000 <= first < 5_000_050
    assert 15 <= second - first < 200
    assert not clock.stale()


def test_the_manual_clock_moves_when_told() -> None:
    clock = ManualClock(100)
    clock.advance(50)
    assert clock.now_ms() == 150
    clock.set(7)
    assert clock.now_ms() == 7


def test_log_lines_show_times_as_iso_8601_utc_with_milliseconds() -> None:
    assert iso(1_796_119_200_123) == "2026-12-01T10:00:00.123Z"
    assert iso(0) == "1970-01-01T00:00:00.000Z"
    assert iso(1.9) == "1970-01-01T00:00:00.001Z"  # a fraction of a millisecond is dropped
    assert iso(MAX_MS + 1) == f"{MAX_MS + 1} ms"  # no datetime holds it: the number, said so


def test_the_lead_of_a_moment_is_the_microseconds_before_its_due_ms_in_any_zone() -> None:
    import random
    from datetime import UTC, datetime, timedelta, timezone

    from duetime.clock import EPOCH, US, epoch_ms, lead_us

    rng = random.Random(23)
    zones = [timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))]
    for _ in range(2000):
        moment = EPOCH + timedelta(microseconds=rng.randrange(-(10**16), 10**17))
        due = epoch_ms(moment)
        expected = due * 1000 - (moment - EPOCH) // US  # by the definition
        assert 0 <= expected <= 999
        assert lead_us(moment, due) == expected  # a UTC moment: from its microseconds
        for zone in zones:
            assert lead_us(moment.astimezone(zone), due) == expected
    assert lead_us(datetime(2030, 1, 1, 0, 0, 0, 999, tzinfo=UTC), 1893456000001) == 1
