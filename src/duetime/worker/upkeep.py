"""What runs beside a worker's claim loops: the store's upkeep (its clock sampled again, its
settings read), the listeners' closing and finishing with their failures logged, and the
cancellation of the worker's helper tasks at the end."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from duetime.clock import RESAMPLE_SECONDS, Clock, StoreClock
from duetime.events import Listener
from duetime.stores.base import Store
from duetime.worker.failures import log_store_failure

log = logging.getLogger(__name__)

#: How often a running worker samples the store's clock and reads its settings again.
UPKEEP_SECONDS = RESAMPLE_SECONDS


def close_listener(listener: Listener) -> Callable[[], Awaitable[list[str]]]:
    async def close() -> list[str]:
        await listener.close()
        return []

    return close


async def log_problems(check: Callable[[], Awaitable[list[str]]], what: str) -> None:
    """Log as errors the problems ``check`` finds with the store (settings that lose tasks
    or events), or that it could not ``what``."""
    try:
        problems = await check()
    except Exception as exc:
        log_store_failure(exc, "could not %s: %s", what, exc)
        return
    for problem in problems:
        log.error("%s", problem)


async def finish_listener(listener: Listener, store: Store, clock: Clock) -> list[str]:
    await listener.finish(store, clock)
    return []


async def upkeep_loop(store: Store, clock: Clock) -> None:
    """Once a minute: sample the store's clock again, and read the store's settings, so
    that one reconfigured to lose tasks since the worker started (a Redis switched to
    evicting keys) gets an error in the log."""

    async def check() -> list[str]:
        if isinstance(clock, StoreClock):
            await clock.sync()
        return await store.check_settings()

    while True:
        await asyncio.sleep(UPKEEP_SECONDS)
        await log_problems(check, "read the store's clock or settings")


async def cancel_until_done(tasks: list[asyncio.Task[Any]]) -> None:
    """Cancel tasks and wait for them, cancelling again if one swallowed the cancellation.

    On Python 3.11, asyncio.wait_for (used inside redis-py: a Cluster's store, the
    listings) can swallow a cancellation that arrives as its inner call completes; a plain
    cancel() could then leave a task running.
    """
    pending = {task for task in tasks if not task.done()}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=0.5)
