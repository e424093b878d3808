"""The calls on cron schedules: adding, pausing, resuming, triggering, removing and listing
them (a client's), and the ``@app.cron`` decorator (an App's)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Unpack

from duetime.errors import ValidationError
from duetime.features.cron.feature import CronFeature
from duetime.features.cron.named import NamedTriggers
from duetime.features.cron.options import CRON_OPTIONS, CronOptions
from duetime.model import TaskOptions
from duetime.registry import AppSide, ClientSide
from duetime.stores.capabilities import RUN_HISTORY, has
from duetime.tasktype import Handler, TaskType, call_mode
from duetime.validate import check_id, check_name, to_ms

if TYPE_CHECKING:
    from duetime.features.cron.manage import CronInfo

#: The calls on schedules (:mod:`.manage`, with what reads cron expressions) are imported by
#: each method that needs them: an app without cron schedules never does.


class CronTaskOptions(CronOptions, TaskOptions, total=False):
    """What ``@app.cron`` takes: the schedule's options and its task type's."""


class CronCalls:
    """The calls on the cron schedules of a client or app (a part of it)."""

    @property
    def named_triggers(self: ClientSide) -> NamedTriggers:
        """The app's cron schedules by name: declared in code, and in the store."""
        return self.registry.get(CronFeature).named

    async def add_cron(
        self: ClientSide, name: str, expression: str, *, task: str, **options: Unpack[CronOptions]
    ) -> bool:
        """Add (or update) the cron schedule ``name``, which runs task type ``task``.

        Args:
            expression: 5 fields (minute hour day-of-month month day-of-week), 6 with
                seconds first, or an alias (@yearly, @monthly, @weekly, @daily, @hourly).
            options: the schedule's (:class:`~duetime.features.cron.manage.CronOptions`):
                ``tz``, ``payload``, ``missed``, ``overlap``, ``jitter``, ``catchup``,
                ``start``, ``end``, ``limit``, ``immediately``, ``grace``.

        Returns:
            False when the store already held the same schedule (nothing was written).

        Raises:
            ValidationError: a bad field (an end before the start, a limit below 1, ...), or
                ``name`` taken by a schedule of another type; nothing is written.
        """
        from duetime.features.cron import manage

        self.task_type(task)
        declared = manage.define(
            name, task, expression, max_payload_bytes=self.max_payload_bytes, **options
        )
        return await self.registry.get(CronFeature).named.upsert(declared)

    async def pause_cron(self: ClientSide, name: str) -> None:
        """Stop firing the schedule ``name`` until :meth:`resume_cron`; a run in progress ends."""
        from duetime.features.cron import manage

        await manage.set_paused(self.registry.get(CronFeature).named, name, True)

    async def resume_cron(self: ClientSide, name: str) -> None:
        """Fire a paused schedule again, from its next tick."""
        from duetime.features.cron import manage

        await manage.set_paused(self.registry.get(CronFeature).named, name, False)

    async def trigger_cron(self: ClientSide, name: str) -> str:
        """Run the schedule ``name`` once now, beside its ticks (which stay as they are): a
        task of its own with the schedule's payload, whose id and ``ctx.occurrence`` are
        ``"<name>@<now ms>"``, run, retried and filed like a tick with overlap "allow".
        Paused and finished schedules too; it does not count toward ``limit``.

        Returns:
            The id of the run's task.

        Raises:
            ScheduleNotFound: no schedule has this name (in the store or declared).
        """
        from duetime.features.cron import manage

        named = self.registry.get(CronFeature).named
        return await manage.trigger_now(named, name, await self.now_ms())

    async def remove_cron(self: ClientSide, name: str) -> bool:
        """Remove the schedule ``name`` from the store. One declared in code comes back when
        a worker starts; remove it from the code too."""
        return await self.registry.get(CronFeature).named.remove(name)

    async def backfill_cron(self: ClientSide, name: str, *, start: datetime, end: datetime) -> int:
        """Run every tick of the schedule ``name`` in ``[start, end)`` now, oldest first:
        after an outage, the ticks no worker ran.

        Each tick is a task of the schedule's type, due now, whose id is its occurrence id
        ``"<name>@<tick ms>"`` (``ctx.occurrence`` in the handler, as on time), with the
        schedule's payload; the schedule's own ticks go on unchanged. A tick a task still
        holds (an earlier backfill's, not yet run) is left alone, and so is one the run
        history records as done, so a backfill repeated over the same range runs nothing
        twice. The ticks run as the type's concurrency allows, whatever the schedule's
        overlap policy.

        Args:
            start: the first moment of the range (an aware datetime).
            end: the end of the range, not included.

        Returns:
            How many ticks were scheduled.

        Raises:
            ValidationError: ``start`` or ``end`` is not an aware datetime, ``end`` is not
                after ``start``, or the range holds more than 10,000 ticks; nothing is
                written.
            ScheduleNotFound: there is no cron schedule ``name``.
        """
        check_id(name, "name", stored=True)
        start_ms, end_ms = to_ms("start", start), to_ms("end", end)
        if end_ms <= start_ms:
            raise ValidationError("end", "must be after start")
        named = self.registry.get(CronFeature).named
        store = await self.open()
        recorded = has(self.store(), RUN_HISTORY)
        now = await self.now_ms()
        from duetime.features.cron.backfill import backfill

        return await backfill(named, store, name, start_ms, end_ms, now, recorded=recorded)

    async def next_runs(self: ClientSide, name: str, count: int = 5) -> list[datetime]:
        """The next ``count`` ticks of the schedule ``name``, in its time zone."""
        from duetime.features.cron import manage

        named = self.registry.get(CronFeature).named
        return await manage.next_runs(named, name, count, await self.now_ms())

    async def crons(self: ClientSide) -> list[CronInfo]:
        """Every cron schedule: those in the store, and those declared in code."""
        from duetime.features.cron import manage

        return await manage.infos(self.registry.get(CronFeature).named)


class CronDecorator:
    """``@app.cron``: a handler run on a cron schedule (a part of the App)."""

    def cron(
        self: AppSide, expression: str, *, name: str, **options: Unpack[CronTaskOptions]
    ) -> Callable[[Handler], TaskType]:
        """Run the decorated function on a cron schedule: task type and schedule ``name``.

        The handler takes ``(ctx)`` or ``(payload, ctx)``; ``ctx.occurrence`` is
        ``"<name>@<tick ms>"``, the same on every worker and every attempt. The schedule is
        written to the store when a worker starts, so it survives restarts; declaring it
        again with another definition updates it. The options are the schedule's
        (:class:`~duetime.features.cron.manage.CronOptions`: ``tz``, ``payload``,
        ``missed``, ``overlap``, ``jitter``, ``catchup``, ``start``, ``end``, ``limit``,
        ``immediately``, ``grace``) and the task type's (those of
        :meth:`~duetime.App.task`: retries, timeout, ...).

        Raises:
            ValidationError: a bad expression (naming the field), time zone, policy or
                jitter, or a name already taken by another handler.
        """
        from duetime.features.cron import manage

        check_name("task_type", name)
        given: dict[str, Any] = dict(options)
        schedule = {key: given.pop(key) for key in list(given) if key in CRON_OPTIONS}
        declared = manage.define(
            name, name, expression, max_payload_bytes=self.max_payload_bytes, **schedule
        )
        register_type = self.task(name, **given)
        named = self.registry.get(CronFeature).named

        def register(fn: Handler) -> TaskType:
            mode = call_mode(fn, cron=True)
            task_type = register_type(fn)
            task_type.mode = mode
            named.declare(declared)
            return task_type

        return register
