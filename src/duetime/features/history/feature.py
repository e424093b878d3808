"""The run history as workers see it: the types whose runs a worker records as it settles
them, and the store capability that needs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from duetime.features.base import Feature, WorkerRun
from duetime.features.history.settings import INTERNAL_PREFIX, resolve
from duetime.model import History
from duetime.stores.capabilities import RUN_HISTORY, Capability
from duetime.stores.runs import RunLog
from duetime.tasktype import TaskTypes


class HistoryFeature(Feature):
    """Every finished run recorded in the store with its outcome, for ``app.history``,
    ``duetime history`` and the dashboard.

    Args:
        types: the app's task types (each may set ``history`` of its own).
        default: the app's setting (``App(history=...)``).
    """

    def __init__(self, types: TaskTypes, default: History | bool) -> None:
        self.types = types
        self.default = default

    def history_of(self, name: str) -> History | None:
        """The history the type ``name`` keeps (None: none; duetime's own types keep none)."""
        if name.startswith(INTERNAL_PREFIX):
            return None
        task_type = self.types.get(name)
        return resolve(None if task_type is None else task_type.history, self.default)

    def needs(self) -> Sequence[tuple[Capability[Any], str]]:
        keeps = self.default is not False or any(t.history for t in self.types.values())
        return [(RUN_HISTORY, "a run history")] if keeps else []

    def records(self, run: WorkerRun) -> Mapping[str, RunLog]:
        found = {name: self.history_of(name) for name in run.types}
        return {
            name: RunLog(run.worker_id, h.keep, h.max_age_ms)
            for name, h in found.items()
            if h is not None
        }
