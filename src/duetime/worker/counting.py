"""Counts a worker's events per task type and minute, in memory (a dictionary update per
event, no round trip), and adds them to the store every few seconds in one call: the
history of :mod:`duetime.monitor.history`."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Coroutine
from typing import Any

from duetime.clock import Clock
from duetime.monitor.history import Key, bucket_of
from duetime.stores.base import Store
from duetime.stores.telemetry import KEEP_MINUTES, MINUTE_MS, minute_of
from duetime.worker.events import Listener, WorkerEvent

log = logging.getLogger(__name__)

#: How often a worker adds its counts to the store.
FLUSH_SECONDS = 5.0


class MinuteCounter(Listener):
    """Counts one worker's events per minute and adds them to the store every
    FLUSH_SECONDS. Counts the store could not take are kept for the next flush, as long as
    their minute is within the hour kept."""

    def __init__(self) -> None:
        self._counts: Counter[Key] = Counter()

    # Fired: a handler started (the task's time came and it ran), with its lateness.
    def started(self, event: WorkerEvent) -> None:
        late = event.lateness_ms or 0.0
        minute = minute_of(int(event.due_ms + late))
        counts, name = self._counts, event.task_type
        counts[minute, name, "fired"] += 1
        counts[minute, name, bucket_of(late)] += 1

    def succeeded(self, event: WorkerEvent) -> None:
        self._count(event, "succeeded")

    def failed(self, event: WorkerEvent) -> None:
        self._count(event, "failed")

    def retried(self, event: WorkerEvent) -> None:
        self._count(event, "retried")

    def dead_lettered(self, event: WorkerEvent) -> None:
        self._count(event, "dead_lettered")

    def missed_ticks(self, event: WorkerEvent) -> None:
        self._count(event, "missed", event.count)

    def _count(self, event: WorkerEvent, what: str, n: int = 1) -> None:
        # When: the due time, plus how late it started and how long it ran where known.
        at = event.due_ms + (event.lateness_ms or 0) + (event.duration_ms or 0)
        self._counts[minute_of(int(at)), event.task_type, what] += n

    def loops(self, store: Store, clock: Clock) -> list[Coroutine[Any, Any, None]]:
        return [self._flush_loop(store, clock)]

    async def finish(self, store: Store, clock: Clock) -> None:
        await self.flush(store, clock.now_ms())

    async def _flush_loop(self, store: Store, clock: Clock) -> None:
        while True:
            await asyncio.sleep(FLUSH_SECONDS)
            await self.flush(store, clock.now_ms())

    async def flush(self, store: Store, now_ms: int) -> None:
        """Add what was counted to the store; on failure keep it for the next time."""
        if not self._counts:
            return
        taken, self._counts = self._counts, Counter()
        try:
            await store.telemetry.add_counts(taken, now_ms)
        except Exception as exc:
            oldest = minute_of(now_ms) - (KEEP_MINUTES - 1) * MINUTE_MS
            self._counts.update({k: n for k, n in taken.items() if k[0] >= oldest})
            log.warning("could not add the last seconds' counts to the store: %s", exc)
