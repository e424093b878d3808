"""The kinds of trigger a record may carry, found by the field that marks each.

A new kind is a module of its own under ``duetime.triggers`` and a line here; a record
carries at most one trigger. A kind's module is imported the first time a record carries
its field (an app of one-off tasks imports none).
"""

from __future__ import annotations

import importlib
from typing import cast

from duetime.triggers.base import TriggerKind

#: The field that marks each kind, and where the kind lives (module, class), in the order
#: a record is read.
MARKS: tuple[tuple[str, str, str], ...] = (
    ("e", "duetime.triggers.periodic", "Periodic"),
    ("c", "duetime.triggers.cron.trigger", "CronTrigger"),
    ("x", "duetime.triggers.expiry", "Expiring"),
    ("l", "duetime.triggers.poll", "PollTick"),
)

_found: dict[str, TriggerKind] = {}


def kind_of(doc: dict[str, object]) -> TriggerKind | None:
    """The kind of trigger a decoded record's fields (``doc``) carry, or None."""
    for key, module, name in MARKS:
        if key in doc:
            kind = _found.get(key)
            if kind is None:
                kind = _found[key] = cast(
                    TriggerKind, getattr(importlib.import_module(module), name)
                )
            return kind
    return None
