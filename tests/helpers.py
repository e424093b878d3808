"""Small helpers shared by the tests."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import duetime
from duetime.record import Record
from duetime.triggers.periodic import Periodic


@contextlib.asynccontextmanager
async def running(app: duetime.App, **options: Any) -> AsyncIterator[duetime.Worker]:
    """A worker running in this event loop for the duration of the block."""
    worker = app.worker(**options)
    task = asyncio.create_task(worker.run())
    await asyncio.wait_for(worker.started.wait(), 10)
    try:
        yield worker
    finally:
        worker.stop()
        await asyncio.wait_for(task, 30)


async def eventually(
    check: Callable[[], bool | Awaitable[bool]], within: float = 5.0, every: float = 0.01
) -> None:
    """Wait until ``check()`` is true; fail with a clear message after ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        result = check()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {within} s")
        await asyncio.sleep(every)


def record_text(
    payload_json: str = "{}",
    *,
    every_ms: int | None = None,
    occurrence_ms: int | None = None,
    failures: int = 0,
) -> str:
    """A task's record as duetime stores it."""
    trigger = None if every_ms is None else Periodic(every_ms)
    return Record(payload_json, trigger, occurrence_ms, failures).encode()
