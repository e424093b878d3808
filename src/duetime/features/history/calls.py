"""The App's calls on the run history: ``app.history(type, id)``; and, for code written
before the history, ``app.history(minutes)``: the last hour's counts (``app.recent``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, overload

from duetime.errors import ValidationError
from duetime.model import MAX_HISTORY_KEEP
from duetime.registry import AppSide
from duetime.stores.capabilities import RUN_HISTORY, require
from duetime.validate import check_id, check_int

if TYPE_CHECKING:
    from duetime.features.history.runs import RunInfo
    from duetime.features.telemetry.history import TypeHistory

#: Runs ``app.history`` returns unless told.
DEFAULT_LIMIT = 50


class Watching(AppSide, Protocol):
    """The App as its history calls use it: with the last hour's counts (``recent``)."""

    async def recent(self, minutes: int = 60) -> dict[str, TypeHistory]: ...


class HistoryCalls:
    """What an :class:`~duetime.App` tells of the runs that finished (a part of it)."""

    @overload
    async def history(
        self: Watching, task_type: str, task_id: str | None = None, *, limit: int = ...
    ) -> list[RunInfo]: ...

    @overload
    async def history(self: Watching, minutes: int = 60, /) -> dict[str, TypeHistory]: ...

    @overload
    async def history(self: Watching, *, minutes: int) -> dict[str, TypeHistory]: ...

    async def history(
        self: Watching,
        task_type: str | int = 60,
        task_id: str | None = None,
        *,
        limit: int = DEFAULT_LIMIT,
        minutes: int | None = None,
    ) -> list[RunInfo] | dict[str, TypeHistory]:
        """The recent runs of a task type, newest first: ``app.history("report")``, or of
        one task, ``app.history("reminder", task_id="s1")`` (its every occurrence and
        attempt, as long as the type keeps them: see :class:`~duetime.History`).

        Given a number of minutes, or nothing, it is :meth:`recent` instead: the last
        hour's per-minute counts, as it was before the run history (``app.history(60)``,
        ``app.history(minutes=5)``).

        Args:
            task_type: a registered or declared task type.
            task_id: only the runs of this task (its occurrence ids, ``"<id>@<ms>"``, are
                tasks of their own: a cron tick handed off, a key event).
            limit: the most runs returned (1 to 1,000,000).

        Returns:
            :class:`~duetime.RunInfo` objects, newest first.

        Raises:
            UnknownTaskType: the type is neither registered nor declared.
            ValidationError: a bad id or limit.
            ConfigError: the store keeps no run history.
        """
        if minutes is not None:
            return await self.recent(minutes)
        if not isinstance(task_type, str):
            return await self.recent(task_type)
        self.task_type(task_type)
        if task_id is not None:
            check_id(task_id, stored=True)
        if check_int("limit", limit) > MAX_HISTORY_KEEP:
            raise ValidationError("limit", f"must be at most {MAX_HISTORY_KEEP:,}")
        require(self.store(), RUN_HISTORY, "app.history", self.where())
        from duetime.features.history.runs import read_runs

        return await read_runs(await self.open(), task_type, task_id, limit)
