"""The pollers feature as workers see it: a worker running a poller's handler type also
runs the poller's calls, writes each poller's task when the store has none, brings a
poller's next call forward as its instructions end, and tells ``app.events``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from duetime.clock import Clock
from duetime.events import Listener
from duetime.features.base import Feature, WorkerRun
from duetime.features.pollers.registry import Pollers
from duetime.stores.base import Store

if TYPE_CHECKING:
    from duetime.features.pollers.events import PollerEvents


class PollerFeature(Feature):
    """An app's pollers, and the listeners of their events (``app.events``). What runs
    pollers is imported only by an app that has one (or listens to their events)."""

    def __init__(self) -> None:
        self.pollers = Pollers()
        self._events: PollerEvents | None = None

    @property
    def events(self) -> PollerEvents:
        """The listeners of the pollers' events (made on first use)."""
        if self._events is None:
            from duetime.features.pollers.events import PollerEvents

            self._events = PollerEvents()
        return self._events

    def worker_types(self, names: Sequence[str]) -> list[str]:
        return self.pollers.expand(names)

    async def start(self, run: WorkerRun) -> Sequence[Listener]:
        running = _Running(self.pollers)  # every worker: no poller may come meanwhile
        pollers = self.pollers.of(run.types)
        if not pollers:
            return [running]
        await self.pollers.write_missing(run.store, pollers, run.clock.now_ms())
        listeners: list[Listener] = [running, self.events]
        hastened = [p for p in pollers if p.handler_type is not None and p.name in run.types]
        if hastened:
            from duetime.features.pollers.hastener import Hastener

            listeners.append(Hastener(hastened))
        return listeners


class _Running(Listener):
    """Counts the app's workers that run pollers: none may be registered meanwhile."""

    def __init__(self, pollers: Pollers) -> None:
        self._pollers = pollers

    async def start(self, store: Store, clock: Clock) -> None:
        self._pollers.workers_running += 1

    async def close(self) -> None:
        self._pollers.workers_running -= 1
