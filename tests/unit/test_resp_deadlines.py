"""The Redis client's call deadlines (stores/redis/resp/deadlines.py): a call that runs
out of time fails with TimeoutError (and is sent again by the client); any other
cancellation goes through untouched."""

from __future__ import annotations

import asyncio
import time

import pytest

from duetime.stores.redis.resp.client import CALL_TIMEOUT_SECONDS
from duetime.stores.redis.resp.deadlines import Deadlines


async def _wait_watched(deadlines: Deadlines, seconds: float) -> None:
    with deadlines.watch():
        await asyncio.sleep(seconds)


async def test_a_call_past_its_deadline_fails_with_timeout_error() -> None:
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="no reply in 0.05 s"):
        await _wait_watched(Deadlines(0.05), 10)
    assert time.monotonic() - started < 2  # rounded up to a whole second at most
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_a_call_within_its_deadline_is_left_alone() -> None:
    deadlines = Deadlines(CALL_TIMEOUT_SECONDS)
    await _wait_watched(deadlines, 0)
    assert all(not cohort for cohort in deadlines._cohorts.values())


async def test_a_cancelled_call_is_cancelled_not_timed_out() -> None:
    call = asyncio.ensure_future(_wait_watched(Deadlines(CALL_TIMEOUT_SECONDS), 10))
    await asyncio.sleep(0)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call


async def test_a_cancellation_that_comes_with_the_deadline_still_cancels() -> None:
    deadlines = Deadlines(CALL_TIMEOUT_SECONDS)
    call = asyncio.ensure_future(_wait_watched(deadlines, 10))
    await asyncio.sleep(0)
    (second,) = deadlines._cohorts
    deadlines._expire(second)  # the deadline and a caller's cancel() in one loop turn
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
