"""The telemetry feature as workers see it: a worker that is monitored keeps its heartbeat
record in the store and counts what happens per type and minute."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from duetime.events import Listener
from duetime.features.base import Feature, WorkerRun
from duetime.stores.capabilities import TELEMETRY, Capability
from duetime.version import VERSION


class TelemetryFeature(Feature):
    """Live workers and the last hour, for ``duetime workers``, ``duetime stats`` and the
    dashboard."""

    def needs(self) -> Sequence[tuple[Capability[Any], str]]:
        return [(TELEMETRY, "live workers and the last hour's counts")]

    async def start(self, run: WorkerRun) -> Sequence[Listener]:
        if not run.monitored:
            return ()
        # Imported here: a producer (``import duetime``) never beats nor counts.
        from duetime.features.telemetry.counting import MinuteCounter
        from duetime.features.telemetry.heartbeat import Heartbeat

        return [Heartbeat(run, VERSION), MinuteCounter()]
