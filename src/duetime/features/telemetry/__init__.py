"""Watching duetime from any machine: which workers live (:mod:`.presence`) and what
happened in the last hour (:mod:`.history`), kept in the store by the workers themselves
through its :class:`~duetime.stores.telemetry.Telemetry`."""

from __future__ import annotations

from duetime.features.telemetry.history import MinuteCounts, TypeHistory, read_history
from duetime.features.telemetry.presence import WorkerInfo, read_workers

__all__ = [
    "MinuteCounts",
    "TypeHistory",
    "WorkerInfo",
    "read_history",
    "read_workers",
]
