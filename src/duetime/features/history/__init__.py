"""The run history: every finished run of a task type recorded in the store with its
outcome (:mod:`.settings`, :mod:`.feature`, :mod:`.runs`, :mod:`.calls`). What reads runs
back (:mod:`.runs`) is imported by the calls that read them."""

from __future__ import annotations

from duetime.features.history.feature import HistoryFeature
from duetime.model import History

__all__ = ["History", "HistoryFeature"]
