"""The expiring-entries feature: an app's groups, by name. A group is a task type of its
own, so workers run its expiries like any task; the feature asks only that the store keep
expiring entries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from duetime.features.base import Feature
from duetime.stores.capabilities import ENTRIES, Capability

if TYPE_CHECKING:  # imported by an app that makes a group (expiring/calls.py)
    from duetime.features.expiring.group import ExpiringGroup


class ExpiringFeature(Feature):
    """An app's expiring groups (``app.expiring``), by name."""

    def __init__(self) -> None:
        self.groups: dict[str, ExpiringGroup] = {}

    def needs(self) -> Sequence[tuple[Capability[Any], str]]:
        return [(ENTRIES, "expiring groups")] if self.groups else []
