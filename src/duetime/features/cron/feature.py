"""The cron feature as workers see it: the schedules the code declares are written to the
store as a worker of their types starts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from duetime.events import Listener
from duetime.features.base import Connection, Feature, WorkerRun
from duetime.features.cron.named import NamedTriggers
from duetime.stores.capabilities import SCHEDULE_NAMES, Capability


class CronFeature(Feature):
    """An app's cron schedules: those its code declares, and those in its store."""

    def __init__(self, connection: Connection, named: NamedTriggers | None = None) -> None:
        if named is None:
            named = NamedTriggers(connection.open, connection.now_ms)
        self.named = named

    def bound(self, connection: Connection) -> CronFeature:
        return CronFeature(connection, self.named.bound(connection.open, connection.now_ms))

    def needs(self) -> Sequence[tuple[Capability[Any], str]]:
        return [(SCHEDULE_NAMES, "cron schedules")]

    async def start(self, run: WorkerRun) -> Sequence[Listener]:
        await self.named.write_declared(only=run.types)
        return ()
