"""Watching duetime from any machine: which workers live (:mod:`.presence`) and what
happened in the last hour (:mod:`.history`), kept in the store by the workers themselves
through its :class:`~duetime.stores.telemetry.Telemetry`. The names here are imported on
first use: a worker, which counts (:mod:`.counting`) and beats (:mod:`.heartbeat`), never
loads the reading side."""

from __future__ import annotations

from typing import TYPE_CHECKING

from duetime._lazy import lazy_names

if TYPE_CHECKING:
    from duetime.features.telemetry.history import MinuteCounts, TypeHistory, read_history
    from duetime.features.telemetry.presence import WorkerInfo, read_workers

_LAZY = {
    "MinuteCounts": "duetime.features.telemetry.history",
    "TypeHistory": "duetime.features.telemetry.history",
    "read_history": "duetime.features.telemetry.history",
    "WorkerInfo": "duetime.features.telemetry.presence",
    "read_workers": "duetime.features.telemetry.presence",
}


__getattr__ = lazy_names(__name__, _LAZY)

__all__ = [
    "MinuteCounts",
    "TypeHistory",
    "WorkerInfo",
    "read_history",
    "read_workers",
]
