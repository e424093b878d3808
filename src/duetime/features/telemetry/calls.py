"""The App's calls for watching it from any machine: its live workers, and what happened in
the last hour."""

from __future__ import annotations

from typing import TYPE_CHECKING

from duetime.errors import ValidationError
from duetime.registry import AppSide
from duetime.validate import check_int

if TYPE_CHECKING:
    from duetime.features.telemetry.history import TypeHistory
    from duetime.features.telemetry.presence import WorkerInfo


class WatchCalls:
    """What an :class:`~duetime.App` tells of its workers (a part of it)."""

    async def workers(self: AppSide) -> list[WorkerInfo]:
        """The workers of this namespace alive now, on any machine, from their heartbeat
        records in the store (one lapses 15 s after its worker's last beat)."""
        from duetime.features.telemetry.presence import read_workers  # the reading side

        return await read_workers(await self.open(), await self.now_ms())

    async def recent(self: AppSide, minutes: int = 60) -> dict[str, TypeHistory]:
        """What happened to each task type in the last ``minutes`` (1 to 60, the current
        minute included), per minute, as the workers counted it (``app.history(minutes)``
        says the same: its name before the run history)."""
        if check_int("minutes", minutes) > 60:
            raise ValidationError("minutes", "must be 60 or fewer: the store keeps one hour")
        from duetime.features.telemetry.history import read_history  # the reading side

        return await read_history(await self.open(), await self.now_ms(), minutes)
