"""The wait of ``App.result(..., wait=...)`` for a task's run to finish: woken by the
store's wake-ups (a hint), and at growing intervals (capped) in case a wake-up never
comes, it looks the task up, and reads the run history when the task is gone or changed:
the stored run is the truth."""

from __future__ import annotations

import asyncio
import contextlib

from duetime.features.results.read import last_finished
from duetime.stores.base import Store
from duetime.stores.runs import StoredRun

#: The first and the longest wait between two reads of the history without a wake-up.
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
    woken = asyncio.Event()

    def on_wake(woken_type: str, due_ms: int) -> None:
        if woken_type in (task_type, "*"):
            woken.set()

    listening = asyncio.create_task(store.listen(on_wake))  # subscribed before reading
    try:
        async with asyncio.timeout(seconds):
            return await _next_run(store, task_type, task_id, woken)
    except TimeoutError:
        return None
    finally:
        listening.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await listening


async def _next_run(store: Store, task_type: str, task_id: str, woken: asyncio.Event) -> StoredRun:
    """The run to answer with. Between wake-ups and pauses it looks the task up (one key or
    row); it reads the history only when the task is not due or running (it finished, it
    is dead, it is not written yet) or changed (a run began, a retry or the next
    occurrence of a series came due)."""
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
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(pause):
                await woken.wait()
        woken.clear()
        pause = min(pause * 2, CAP_SECONDS)
        now = await store.get(task_type, task_id)
        look, seen = now != seen, now
