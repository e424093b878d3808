"""The run history: every finished run of a task type recorded in the store with its
outcome (:mod:`.settings`, :mod:`.feature`, :mod:`.runs`, :mod:`.calls`)."""

from __future__ import annotations

from duetime.features.history.feature import HistoryFeature
from duetime.features.history.runs import RunInfo, read_runs
from duetime.model import History

__all__ = ["History", "HistoryFeature", "RunInfo", "read_runs"]
