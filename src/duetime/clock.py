"""Clocks: where "now" comes from, and epoch milliseconds, the unit of every stored time.

Workers and producers read time from the store's clock, so that machines whose own clocks
disagree still agree on what is due. A :class:`StoreClock` samples the store's time now and
then and advances it with the local monotonic clock in between, so reading it costs no
round trip and a wrong or jumping wall clock on this machine changes nothing.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

#: How often a StoreClock samples the store's time again. Monotonic clocks drift by a few
#: parts per million, so this keeps the error far under a millisecond.
RESAMPLE_SECONDS = 60.0
#: Samples per sync: the shortest round trip among them is the least skewed by scheduling.
SAMPLES = 5

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MS = timedelta(milliseconds=1)
US = timedelta(microseconds=1)
#: The epoch milliseconds a datetime can hold: from the year 1 to the end of the year 9999.
MIN_MS = -((EPOCH - datetime.min.replace(tzinfo=UTC)) // MS)
MAX_MS = (datetime.max.replace(tzinfo=UTC) - EPOCH) // MS
#: When something that waits forever is due (a paused schedule, a type's stored layout):
#: the last whole second of the year 9999.
NEVER_MS = 253_402_300_799_000


def in_range(ms: int) -> bool:
    """Whether epoch milliseconds ``ms`` make a datetime (years 1 to 9999)."""
    return MIN_MS <= ms <= MAX_MS


@functools.lru_cache(maxsize=1024)
def from_ms(ms: int) -> datetime:
    """The aware UTC datetime of epoch milliseconds (cached: tasks often share due times)."""
    return EPOCH + timedelta(milliseconds=ms)  # integer arithmetic: exact in any year


def iso(ms: float) -> str:
    """Epoch milliseconds as log lines show a time: ISO 8601 in UTC with milliseconds,
    ``2026-12-01T10:00:00.123Z`` (a value outside the years 1-9999 as the number it is)."""
    whole = int(ms)
    if not in_range(whole):
        return f"{whole} ms"
    return from_ms(whole).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def epoch_ms(moment: datetime) -> int:
    """Epoch milliseconds of an aware datetime, rounded up (never before the moment)."""
    return -((EPOCH - moment) // MS)


def lead_us(moment: datetime, due_ms: int) -> int:
    """How many microseconds before ``due_ms`` (its :func:`epoch_ms`) an aware datetime
    is: 0 to 999."""
    if moment.tzinfo is UTC:  # whole seconds from the epoch: its microseconds tell
        return -moment.microsecond % 1000
    return due_ms * 1000 - (moment - EPOCH) // US


class Clock(Protocol):
    """A source of the current time."""

    def now_ms(self) -> int:
        """The current time in whole epoch milliseconds, rounded down (never ahead)."""
        ...

    def now(self) -> float:
        """The current time in epoch milliseconds, with the fraction (for precise sleeps)."""
        ...


class SystemClock:
    """This machine's wall clock. Only for tests and single-machine tools."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def now(self) -> float:
        return time.time_ns() / 1_000_000


class ManualClock:
    """A clock that moves only when told to, for tests."""

    def __init__(self, now_ms: int) -> None:
        self._now = now_ms

    def now_ms(self) -> int:
        return self._now

    def now(self) -> float:
        return float(self._now)

    def set(self, now_ms: int) -> None:
        self._now = now_ms

    def advance(self, ms: int) -> None:
        self._now += ms


_monotonic = time.monotonic


class StoreClock:
    """The store's clock, sampled and advanced with the local monotonic clock.

    Args:
        read_store_ms: returns the store's current time in epoch milliseconds (one round
            trip); its error is at most half that round trip.
    """

    def __init__(self, read_store_ms: Callable[[], Awaitable[float]]) -> None:
        self._read = read_store_ms
        self._base_ms: float | None = None
        self._base_mono = 0.0
        self._offset_ms = 0.0  # the store's time minus the local monotonic time, ms

    @property
    def synced(self) -> bool:
        return self._base_ms is not None

    def stale(self) -> bool:
        """True when the clock has never been synced or was synced too long ago."""
        return self._base_ms is None or time.monotonic() - self._base_mono > RESAMPLE_SECONDS

    async def sync(self) -> None:
        """Sample the store's time a few times; the sample with the shortest round trip
        anchors the clock at its midpoint (its error is at most half that round trip)."""
        best = None
        for _ in range(SAMPLES):
            before = time.monotonic()
            store_ms = await self._read()
            after = time.monotonic()
            if best is None or after - before < best[0]:
                best = (after - before, store_ms, (before + after) / 2)
        assert best is not None
        self.anchor(best[1], best[2])

    def anchor(self, store_ms: float, mono: float) -> None:
        """Set the clock from one reading: the store's time at local monotonic ``mono``."""
        self._base_ms, self._base_mono = store_ms, mono
        self._offset_ms = store_ms - mono * 1000

    def now_ms(self) -> int:
        return int(self.now())

    def now(self) -> float:
        # Read on every run (twice, with the history on): one subtraction, no lookups more.
        if self._base_ms is None:
            raise RuntimeError("StoreClock.now() before the first sync()")
        return _monotonic() * 1000 + self._offset_ms


class _ClockedStore(Protocol):
    async def time_ms(self) -> float: ...
    async def close(self) -> None: ...


async def synced_clock(store: _ClockedStore) -> StoreClock:
    """The store's clock, read once; the store is closed if it cannot be read (it went
    away just after it opened), so that nothing is left open."""
    clock = StoreClock(store.time_ms)
    try:
        await clock.sync()
    except BaseException:
        await store.close()
        raise
    return clock
