"""The kinds of trigger a record may carry, found by the field that marks each.

A new kind is a module of its own under ``duetime.triggers`` and a line here; a record
carries at most one trigger.
"""

from __future__ import annotations

from duetime.triggers.base import TriggerKind
from duetime.triggers.cron.trigger import CronTrigger
from duetime.triggers.expiry import Expiring
from duetime.triggers.periodic import Periodic
from duetime.triggers.poll import PollTick

KINDS: tuple[TriggerKind, ...] = (Periodic, CronTrigger, Expiring, PollTick)  # type: ignore[assignment]
