"""What workers tell the store about themselves, for people watching from any machine: who
runs (a heartbeat record per worker that lapses when the worker dies) and what happened in
the last hour (counts per task type and minute). Each store provides it as its
``telemetry``; what the records and counts mean is :mod:`duetime.features.telemetry`'s business, the
store only keeps them, bounded in size and expiring by themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

#: How long per-minute counts are kept: the last hour, and the minute under way.
KEEP_MINUTES = 61
MINUTE_MS = 60_000


class Telemetry(Protocol):
    """Heartbeats and per-minute counts. Every call is one round trip (or transaction)."""

    async def beat(self, worker_id: str, record: str, until_ms: int, now_ms: int) -> None:
        """Write the worker's record (JSON), live until ``until_ms`` unless written again;
        forget records that lapsed before ``now_ms``. A worker that stops writes its record
        once more, lapsed (``until_ms`` in the past): it is no longer live, yet still tells
        that a worker ran a moment ago, until a beat forgets it; nothing removes a record
        otherwise."""
        ...

    async def workers(self, now_ms: int) -> list[str]:
        """The records of the workers live at ``now_ms``."""
        ...

    async def add_counts(self, counts: Mapping[tuple[int, str, str], int], now_ms: int) -> None:
        """Add ``counts``, keyed by (minute start ms, task type, what was counted), to what
        the store holds, atomically; counts older than KEEP_MINUTES before ``now_ms``
        are dropped, here or by expiry."""
        ...

    async def counts_since(self, since_ms: int) -> dict[tuple[int, str, str], int]:
        """Every count of a minute that starts at ``since_ms`` or later."""
        ...


def minute_of(ms: int) -> int:
    """The start of the minute ``ms`` falls in (epoch ms)."""
    return ms - ms % MINUTE_MS
