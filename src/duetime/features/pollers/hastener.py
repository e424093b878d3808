"""The worker's side of pollers: a finished instruction brings its poller's next call
forward, so that the free slot is filled at once rather than after the poller's delay."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import Any

from duetime.clock import Clock
from duetime.events import Listener, WorkerEvent
from duetime.features.pollers.poller import Poller
from duetime.stores.base import Store
from duetime.triggers.poll import tick_type

log = logging.getLogger("duetime.pollers")

#: While a call runs (the poller's task does not wait), bringing it forward is tried again
#: when this worker settles the call, or, for a call on another worker, after these waits,
#: in seconds, in case that call ends with a long delay.
HASTEN_RETRY_SECONDS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5)


class Hastener(Listener):
    """A worker's listener that brings a poller's task forward when an instruction ends
    (its outcome is settled), once per batch of settles.

    Args:
        pollers: the pollers with a handler whose tasks this worker runs.
    """

    def __init__(self, pollers: list[Poller]) -> None:
        self._by_type = {p.name: p for p in pollers}
        self._wanted: dict[str, asyncio.Event] = {name: asyncio.Event() for name in self._by_type}
        #: Set when this worker settles a poller's own task: a hasten that found the task
        #: held (its call over, its outcome not yet settled) is tried again then.
        self._tick_settled = {tick_type(name): asyncio.Event() for name in self._by_type}
        #: Set while no poller's task is to be brought forward (see :meth:`wait_idle`).
        self._idle = asyncio.Event()
        self._idle.set()
        self._busy = 0  # loops bringing a task forward now

    def settled(self, event: WorkerEvent) -> None:
        tick_settled = self._tick_settled.get(event.task_type)
        if tick_settled is not None:
            tick_settled.set()
            return
        poller = self._by_type.get(event.task_type)
        if poller is None:
            return
        if poller.calls_running:  # a call runs in this process: the next comes at once
            poller.freed = True
        self._wanted[poller.name].set()
        self._idle.clear()

    async def wait_idle(self) -> None:
        await self._idle.wait()

    def loops(self, store: Store, clock: Clock) -> list[Coroutine[Any, Any, None]]:
        """One loop per poller that brings its task forward as instructions end, until
        cancelled: each a task of the worker's own, so that a cancellation a store call
        swallowed is sent again (see ``worker.upkeep.cancel_until_done``)."""
        return [self._hasten_loop(name, store, clock) for name in self._by_type]

    async def _hasten_loop(self, name: str, store: Store, clock: Clock) -> None:
        wanted, task_type = self._wanted[name], tick_type(name)
        tick_settled = self._tick_settled[task_type]
        while True:
            if not self._busy and not any(w.is_set() for w in self._wanted.values()):
                self._idle.set()
            await wanted.wait()
            wanted.clear()
            self._busy += 1
            try:
                for wait in (*HASTEN_RETRY_SECONDS, None):
                    tick_settled.clear()
                    if await store.hasten(task_type, name, clock.now_ms()) is not None:
                        break
                    if wait is None or wanted.is_set():
                        break
                    # Held by this worker: tried again as soon as it settles the task;
                    # held by another, after the wait.
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(wait):
                            await tick_settled.wait()
            except Exception as exc:
                log.warning("%s: could not bring the next call forward: %s", name, exc)
            finally:
                self._busy -= 1
