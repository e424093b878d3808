"""The wait of ``App.result(..., wait=...)`` for a task's run to finish: at growing
intervals (capped), it looks the task up (one key or row), and reads the run history only
when the task is gone, dead or changed: the stored run is the truth. No store sends a
wake-up of its own for a finished run yet (docs/workflows.md, "Not done yet"); the
stores' wake-ups say when a task becomes the earliest due, which a finish is not, and
listening to them would take a connection per wait."""

from __future__ import annotations

import asyncio

from duetime.features.results.read import last_finished
from duetime.stores.base import Store
from duetime.stores.runs import StoredRun

#: The first and the longest wait between two looks at the task.
FIRST_SECONDS = 0.005
CAP_SECONDS = 0.05

#: The states of a task whose run is yet to finish.
PENDING = ("due", "running")


async def wait_finished(
    store: Store, task_type: str, task_id: str, seconds: float
) -> StoredRun | None:
    """The task's next finished run: the last one when the task is no longer due or
    running (it finished, or it is dead), else the first to finish after this call; None
    when none did within ``seconds``."""
    try:
        async with asyncio.timeout(seconds):
            return await _next_run(store, task_type, task_id)
    except TimeoutError:
        return None


async def _next_run(store: Store, task_type: str, task_id: str) -> StoredRun:
    """The run to answer with. It reads the history only when the task is not due or
    running (it finished, it is dead, it is not written yet) or changed (a run began, a
    retry or the next occurrence of a series came due)."""
    before = await last_finished(store, task_type, task_id)
    seen = await store.get(task_type, task_id)  # read after the history: see below
    pending = seen is not None and seen.state in PENDING
    look, pause = False, FIRST_SECONDS
    while True:
        if look or seen is None or seen.state not in PENDING:
            # A run that finished between the first two reads is newer than `before`, and
            # the task is then no longer pending: this read finds it either way.
            found = await last_finished(store, task_type, task_id)
            if found is not None and (not pending or found != before):
                return found
        await asyncio.sleep(pause)  # no store wakes for a finish yet: see the docstring
        pause = min(pause * 2, CAP_SECONDS)
        now = await store.get(task_type, task_id)
        look, seen = now != seen, now
