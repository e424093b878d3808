"""Counts a worker's events per task type and minute, in memory (a dictionary update per
event, no round trip), and adds them to the store every few seconds in one call: the
history of :mod:`duetime.features.telemetry.history`."""

from __future__ import annotations

import asyncio
import logging
import time
from bisect import bisect_left
from collections.abc import Coroutine, Sequence
from typing import Any

from duetime._outage import OutageLog
from duetime.clock import Clock
from duetime.events import Finished, Listener, WorkerEvent
from duetime.features.telemetry.columns import BUCKETS, KINDS, LATENESS_BUCKETS_MS, Key
from duetime.stores.base import Store
from duetime.stores.capabilities import TELEMETRY, use
from duetime.stores.telemetry import KEEP_MINUTES, MINUTE_MS, minute_of

log = logging.getLogger(__name__)

#: How often a worker adds its counts to the store.
FLUSH_SECONDS = 5.0


#: A row of counts: one column per kind (KINDS), then one per lateness bucket (BUCKETS).
COLUMNS = (*KINDS, *BUCKETS)
FIRST_BUCKET = len(KINDS)
FIRED, SUCCEEDED, FAILED, RETRIED, DEAD_LETTERED, MISSED = range(FIRST_BUCKET)
#: The outcomes of a run whose handler returned (without an error on the outcome).
_SUCCEEDED = frozenset({"done", "next"})


class MinuteCounter(Listener):
    """Counts one worker's events per minute and adds them to the store every
    FLUSH_SECONDS. Counts the store could not take are kept for the next flush, as long as
    their minute is within the hour kept.

    Every task is counted from the batches the worker settles (:meth:`finished`): no event
    is built per task for it. A run costs a few list operations there (rows of counts per
    minute and type, the current minute's rows at hand). Missed cron ticks and failed
    poller calls, which have no run of their own, are counted from their events.
    """

    def __init__(self) -> None:
        self._minutes: dict[int, dict[str, list[int]]] = {}
        self._minute = -1
        self._rows: dict[str, list[int]] = {}
        self._outage = OutageLog("counts", log)

    def _row(self, at_ms: float, task_type: str) -> list[int]:
        at = int(at_ms)
        minute = at - at % MINUTE_MS
        if minute != self._minute:
            self._minute = minute
            self._rows = self._minutes.setdefault(minute, {})
        row = self._rows.get(task_type)
        if row is None:
            row = self._rows[task_type] = [0] * len(COLUMNS)
        return row

    def finished(self, task_type: str, runs: Sequence[Finished]) -> None:
        """Runs the store settled, a batch at a time. A run whose handler started fired in
        the minute it started, with its lateness, and then succeeded or failed; a retry and
        a dead letter (an occurrence of a series filed there too) count as such."""
        row = self._rows.get(task_type)
        start = self._minute  # the minute of ``row``, from start to end
        end = start + MINUTE_MS
        first_bound = LATENESS_BUCKETS_MS[0]
        # What most runs add (fired on time, and succeeded) is counted here and added to
        # the row when the minute changes and at the end: this runs for every task.
        fired_n = on_time = succeeded = 0
        for run in runs:
            outcome = run.outcome
            if outcome is None:  # pragma: no cover - a settled run has its outcome
                continue
            # Unpacked, not read by name.
            op, claim, _due, _record, error, dead_id, _dead, _spawn, _unique, _aborted, _note = (
                outcome
            )
            fired, due = run.fired_ms, claim[3]
            at = fired or due  # no handler ran: when it was due
            if not start <= at < end or row is None:
                if row is not None:
                    _add(row, fired_n, on_time, succeeded)
                    fired_n = on_time = succeeded = 0
                row = self._row(at, task_type)
                start = self._minute
                end = start + MINUTE_MS
            if fired:
                fired_n += 1
                late = at - due
                if late <= first_bound:
                    on_time += 1
                else:
                    row[FIRST_BUCKET + bisect_left(LATENESS_BUCKETS_MS, late)] += 1
                if error:
                    row[FAILED] += 1
                elif op in _SUCCEEDED:
                    succeeded += 1
            if op == "retry":
                row[RETRIED] += 1
            elif op == "dead" or dead_id:
                row[DEAD_LETTERED] += 1
        if row is not None:
            _add(row, fired_n, on_time, succeeded)

    def missed_ticks(self, event: WorkerEvent) -> None:
        self._row(event.due_ms, event.task_type)[MISSED] += event.count

    def poll_failed(self, event: WorkerEvent) -> None:
        """A poller's call failed: a failure of its calls' type."""
        self._row(time.time() * 1000, event.task_type)[FAILED] += 1

    def counts(self) -> dict[Key, int]:
        """What was counted and not yet added to the store, as the store takes it."""
        return {
            (minute, task_type, what): n
            for minute, rows in self._minutes.items()
            for task_type, row in rows.items()
            for what, n in zip(COLUMNS, row, strict=True)
            if n
        }

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
        taken = self.counts()
        self._minutes, self._minute, self._rows = {}, -1, {}
        if not taken:
            return
        try:
            await use(store, TELEMETRY).telemetry.add_counts(taken, now_ms)
        except Exception as exc:
            oldest = minute_of(now_ms) - (KEEP_MINUTES - 1) * MINUTE_MS
            for (minute, task_type, what), n in taken.items():
                if minute >= oldest:
                    self._row(minute, task_type)[COLUMNS.index(what)] += n
            self._outage.failed(
                exc, "could not add the last seconds' counts to the store (%s)", exc
            )
        else:
            self._outage.ok()


def _add(row: list[int], fired: int, on_time: int, succeeded: int) -> None:
    row[FIRED] += fired
    row[FIRST_BUCKET] += on_time
    row[SUCCEEDED] += succeeded
