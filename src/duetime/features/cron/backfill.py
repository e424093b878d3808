"""Backfill: every tick of a cron schedule in a past range, run now, each as a task of its
own with the tick's occurrence id, so that a backfill repeated runs nothing twice."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from duetime.errors import ScheduleNotFound, ValidationError
from duetime.features.cron.named import NamedTriggers
from duetime.model import MAX_HISTORY_KEEP
from duetime.record import Record
from duetime.stores.base import NewTask, Store
from duetime.stores.capabilities import RUN_HISTORY, use
from duetime.triggers.cron.trigger import CronTrigger
from duetime.validate import occurrence_id

#: The most ticks one backfill writes: a range with more is refused (backfill it in parts).
MAX_BACKFILL = 10_000
#: Reads of pending ticks in flight at once.
_READS = 64


async def backfill(
    named: NamedTriggers,
    store: Store,
    name: str,
    start_ms: int,
    end_ms: int,
    now_ms: int,
    *,
    recorded: bool = True,
) -> int:
    """Write every tick of the schedule ``name`` in ``[start_ms, end_ms)``, oldest first, as
    a task of the schedule's type due now with the id ``"<name>@<tick ms>"`` (its occurrence
    id), and the schedule's payload; returns how many were written.

    A tick is left out when a task holds its id (a backfill's task still pending, a tick
    handed off and not yet run, a dead letter), or when the type's run history records it
    done (``recorded``: the store keeps a run history). The pending ticks are read before
    the history, so that a tick that ends in between is found in one or the other; a tick
    done longer ago than the history keeps runs again.

    Raises:
        ValidationError: ``end`` not after ``start``, or more than MAX_BACKFILL ticks.
        ScheduleNotFound: no cron schedule of that name.
    """
    if end_ms <= start_ms:
        raise ValidationError("end", "must be after start")
    task_type, trigger, payload_json = await _schedule(named, name)
    ticks = trigger.expr.ticks_until(start_ms - 1, end_ms - 1, MAX_BACKFILL + 1)
    if len(ticks) > MAX_BACKFILL:
        raise ValidationError(
            "end",
            f"the range holds more than {MAX_BACKFILL:,} ticks of {name!r}: backfill it in parts",
        )
    ids = [occurrence_id(name, tick) for tick in ticks]
    pending = await _pending(store, task_type, ids)
    done = await _done(store, task_type, name, start_ms) if recorded else set()
    new = [
        NewTask(task_id, now_ms, Record(payload_json, None, tick).encode())
        for task_id, tick in zip(ids, ticks, strict=True)
        if task_id not in pending and task_id not in done
    ]
    if not new:
        return 0
    # Due together, they are claimed in the order of their ids: of their ticks.
    taken = await store.schedule(task_type, new, only_new=True)
    return len(new) - len(taken)


async def _schedule(named: NamedTriggers, name: str) -> tuple[str, CronTrigger, str]:
    """The schedule's task type, trigger and payload: as stored, or as declared in code."""
    try:
        stored = await named.stored(name)
    except ScheduleNotFound:
        declared = named.declared.get(name)
        if declared is None or not isinstance(declared.trigger, CronTrigger):
            raise
        return declared.task_type, declared.trigger, declared.payload_json
    if not isinstance(stored.trigger, CronTrigger):
        raise ScheduleNotFound(name)
    return stored.task_type, stored.trigger, stored.record.payload_json


async def _pending(store: Store, task_type: str, ids: Sequence[str]) -> set[str]:
    """The ids of ``ids`` a task holds (due, running or dead)."""
    window = asyncio.Semaphore(_READS)

    async def held(task_id: str) -> bool:
        async with window:
            return await store.get(task_type, task_id) is not None

    found = await asyncio.gather(*(held(task_id) for task_id in ids))
    return {task_id for task_id, there in zip(ids, found, strict=True) if there}


async def _done(store: Store, task_type: str, name: str, start_ms: int) -> set[str]:
    """The occurrence ids of the schedule's runs recorded done since ``start_ms`` (a tick's
    run ends after the tick: older runs are of older ticks)."""
    history = use(store, RUN_HISTORY)
    runs = await history.runs(task_type, limit=MAX_HISTORY_KEEP, since_ms=start_ms)
    return {
        occurrence_id(run.task_id, run.occurrence_ms)
        for run in runs
        if run.outcome == "done" and (run.task_id == name or run.task_id.startswith(name + "@"))
    }
