"""The cron part of the App's API: the @app.cron decorator and schedules managed by name."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from duetime.codec import check_name
from duetime.schedules import CronInfo, Schedules, build_declared
from duetime.tasktype import Handler, TaskType, call_mode

if TYPE_CHECKING:
    from duetime.cron import Missed, Overlap


class CronMethods:
    """Mixed into :class:`duetime.App`."""

    schedules: Schedules
    max_payload_bytes: int

    task: Callable[..., Callable[[Handler], TaskType]]
    _type: Callable[[object], TaskType]

    def cron(
        self,
        expression: str,
        *,
        name: str,
        tz: str = "UTC",
        payload: dict[str, Any] | None = None,
        missed: Missed = "skip",
        overlap: Overlap = "skip",
        jitter: timedelta | float | None = None,
        catchup: timedelta | float | None = None,
        **options: Any,
    ) -> Callable[[Handler], TaskType]:
        """Run the decorated function on a cron schedule: task type and schedule ``name``.

        The handler takes ``(ctx)`` or ``(payload, ctx)``; ``ctx.occurrence`` is
        ``"<name>@<tick ms>"``, the same on every worker and every attempt. The schedule is
        written to the store when a worker starts, so it survives restarts; declaring it
        again with another definition updates it. The other options are those of
        :meth:`task` (retries, timeout, ...). See :meth:`add_cron` for the policies.

        Raises:
            ValidationError: a bad expression (naming the field), time zone, policy or
                jitter, or a name already taken by another handler.
        """
        check_name("task_type", name)
        declared = build_declared(
            name,
            name,
            expression,
            tz=tz,
            payload=payload,
            missed=missed,
            overlap=overlap,
            jitter=jitter,
            catchup=catchup,
            max_payload_bytes=self.max_payload_bytes,
        )
        register_type = self.task(name, **options)

        def register(fn: Handler) -> TaskType:
            mode = call_mode(fn, cron=True)
            task_type = register_type(fn)
            task_type.mode = mode
            self.schedules.declare(declared)
            return task_type

        return register

    # -- cron schedules -----------------------------------------------------------------

    async def add_cron(
        self,
        name: str,
        expression: str,
        *,
        task: str,
        payload: dict[str, Any] | None = None,
        tz: str = "UTC",
        missed: Missed = "skip",
        overlap: Overlap = "skip",
        jitter: timedelta | float | None = None,
        catchup: timedelta | float | None = None,
    ) -> bool:
        """Add (or update) the cron schedule ``name``, which runs task type ``task``.

        Args:
            expression: 5 fields (minute hour day-of-month month day-of-week), 6 with
                seconds first, or an alias (@yearly, @monthly, @weekly, @daily, @hourly).
            tz: the IANA time zone the expression is read in.
            payload: given to each run.
            missed: what to do with ticks missed while every worker was down: ``skip``
                them, run ``once`` for all of them, or run ``all`` of them (at most 100).
                A tick is missed when it starts more than a minute late (or after the
                next tick, if that comes sooner).
            overlap: ``skip`` a tick while the previous run is still running, or
                ``allow`` runs to overlap (each tick is then a task of its own).
            jitter: delay each tick by up to this much, at random (shorter than the period).
            catchup: missed ticks older than this are not caught up.

        Returns:
            False when the store already held the same schedule (nothing was written).

        Raises:
            ValidationError: a bad field, or ``name`` taken by a schedule of another type.
        """
        self._type(task)
        declared = build_declared(
            name,
            task,
            expression,
            tz=tz,
            payload=payload,
            missed=missed,
            overlap=overlap,
            jitter=jitter,
            catchup=catchup,
            max_payload_bytes=self.max_payload_bytes,
        )
        return await self.schedules.upsert(declared)

    async def pause_cron(self, name: str) -> None:
        """Stop firing the schedule ``name`` until :meth:`resume_cron`; a run in progress ends."""
        await self.schedules.set_paused(name, True)

    async def resume_cron(self, name: str) -> None:
        """Fire a paused schedule again, from its next tick."""
        await self.schedules.set_paused(name, False)

    async def remove_cron(self, name: str) -> bool:
        """Remove the schedule ``name`` from the store. One declared in code comes back when
        a worker starts; remove it from the code too."""
        return await self.schedules.remove(name)

    async def next_runs(self, name: str, count: int = 5) -> list[datetime]:
        """The next ``count`` ticks of the schedule ``name``, in its time zone."""
        return await self.schedules.next_runs(name, count)

    async def crons(self) -> list[CronInfo]:
        """Every cron schedule: those in the store, and those declared in code."""
        return await self.schedules.list()
