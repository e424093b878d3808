"""Small helpers shared by the tests."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import duetime


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
