"""The last hour, per task type and minute: tasks fired, succeeded, failed, retried,
dead-lettered, cron ticks missed, and a histogram of lateness. Each worker counts in memory
(:mod:`.counting`) and adds its counts to the store every few seconds in one call;
this module says what the counts are and reads them back.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from duetime.features.telemetry.columns import BUCKETS, KINDS, LATENESS_BUCKETS_MS
from duetime.stores.base import Store
from duetime.stores.capabilities import TELEMETRY, use
from duetime.stores.telemetry import KEEP_MINUTES, MINUTE_MS, minute_of

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class MinuteCounts:
    """What happened to one task type in one minute."""

    minute: datetime
    fired: int = 0
    succeeded: int = 0
    failed: int = 0
    retried: int = 0
    dead_lettered: int = 0
    missed: int = 0
    #: How many started within each bound of LATENESS_BUCKETS_MS (None: beyond the last).
    lateness: Mapping[int | None, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TypeHistory:
    """One task type's last minutes, oldest first, every minute present (zero if idle)."""

    task_type: str
    minutes: list[MinuteCounts]

    def total(self, what: str) -> int:
        """The sum over the minutes of one of KINDS."""
        if what not in KINDS:
            raise ValueError(f"what must be one of {', '.join(KINDS)}")
        return sum(getattr(m, what) for m in self.minutes)

    def lateness_quantile(self, q: float) -> float | None:
        """The lateness (ms) under which a fraction ``q`` of the starts fell: the upper bound
        of the bucket that holds it (None without starts, inf beyond the last bucket)."""
        counts: Counter[int | None] = Counter()
        for m in self.minutes:
            counts.update(m.lateness)
        total = sum(counts.values())
        if not total:
            return None
        seen = 0
        for bound in (*LATENESS_BUCKETS_MS, None):
            seen += counts[bound]
            if seen >= q * total:
                return float("inf") if bound is None else float(bound)
        return float("inf")


async def read_history(store: Store, now_ms: int, minutes: int = 60) -> dict[str, TypeHistory]:
    """The last ``minutes`` (1 to 60, the current one included) of every type that has
    counts, from the store."""
    if not 1 <= minutes <= KEEP_MINUTES - 1:
        raise ValueError(f"minutes must be 1 to {KEEP_MINUTES - 1}")
    first = minute_of(now_ms) - (minutes - 1) * MINUTE_MS
    found = await use(store, TELEMETRY).telemetry.counts_since(first)
    by_type: dict[str, dict[int, dict[str, int]]] = {}
    for (minute, task_type, what), n in found.items():
        if minute >= first:
            by_type.setdefault(task_type, {}).setdefault(minute, {})[what] = n
    return {
        name: TypeHistory(name, [_minute(m, per.get(m, {})) for m in _range(first, minutes)])
        for name, per in sorted(by_type.items())
    }


def _range(first: int, minutes: int) -> range:
    return range(first, first + minutes * MINUTE_MS, MINUTE_MS)


def _minute(minute_ms: int, counts: dict[str, int]) -> MinuteCounts:
    lateness = {
        bound: counts[name]
        for bound, name in zip((*LATENESS_BUCKETS_MS, None), BUCKETS, strict=True)
        if counts.get(name)
    }
    return MinuteCounts(
        datetime.fromtimestamp(minute_ms / 1000, UTC),
        **{k: counts.get(k, 0) for k in KINDS},
        lateness=lateness,
    )
