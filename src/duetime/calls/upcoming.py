"""When a task's next runs come: the calls that read them (``next_occurrences``) and bring
the next one forward (``run_now``), a part of the Client."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from duetime.clock import NEVER_MS, from_ms
from duetime.errors import SchemaError, TaskNotFound, ValidationError
from duetime.record import Record
from duetime.registry import ClientSide
from duetime.stores.base import NewTask, StoredTask
from duetime.triggers.base import Recurring
from duetime.validate import check_id, check_int


class UpcomingCalls:
    """The calls on a task's coming runs (a part of the Client)."""

    async def next_occurrences(
        self: ClientSide, task_type: str, task_id: str, n: int
    ) -> list[datetime]:
        """The next ``n`` due times of a task as a worker will run them (fewer when it ends
        first): a one-off task's due time; a periodic task's or a cron schedule's next
        occurrences, within its ``until``, ``end`` and ``limit``, in its time zone (UTC for
        a fixed period). Occurrences already past fold into one, as a worker folds them; a
        reschedule hook may still change what follows. A running task's list starts after
        the occurrence it runs; a dead task has none.

        Raises:
            ValidationError: ``n`` is not a whole number of 1 or more.
            TaskNotFound: there is no task with this id.
            SchemaError: its record cannot be read.
        """
        self.task_type(task_type)
        check_id(task_id, stored=True)
        check_int("n", n)
        stored = await (await self.open()).get(task_type, task_id)
        if stored is None:
            raise TaskNotFound(task_type, task_id)
        if stored.state == "dead" or stored.record is None:
            return []
        record = Record.decode(stored.record)
        trigger, running = record.trigger, stored.state == "running"
        if not isinstance(trigger, Recurring):
            return [] if running else [from_ms(stored.due_ms)]
        pending = stored.due_ms if record.occurrence_ms is None else record.occurrence_ms
        due = trigger.upcoming(pending, await self.now_ms(), n, running=running)
        return [from_ms(t).astimezone(trigger.zone()) for t in due]

    async def run_now(self: ClientSide, task_type: str, task_id: str) -> datetime:
        """Run a waiting task now: a one-off task, or a retry waiting for its back-off, is
        due now; a periodic task's (or a cron schedule's) next occurrence runs now, and the
        ones after it keep their times (the series keeps its phase). Its record is not
        changed, and it moves only while it waits: a run in progress is never doubled.

        Returns:
            When it is due (now, or earlier if it was due already).

        Raises:
            TaskNotFound: no task with this id waits (it is missing, running or dead: a dead
                one runs again with :meth:`retry`).
            ValidationError: it waits for no occurrence (a paused or finished cron schedule;
                :meth:`trigger_cron` runs one of its ticks now).
        """
        self.task_type(task_type)
        check_id(task_id, stored=True)
        store = await self.open()
        stored = await store.get(task_type, task_id)
        if stored is None or stored.state != "due":
            raise TaskNotFound(task_type, task_id, "due")
        if stored.due_ms >= NEVER_MS:
            raise ValidationError(
                "task_id",
                f"{task_id!r} waits for no occurrence (a paused or finished cron schedule): "
                "trigger_cron runs one of its ticks now",
            )
        await _name_the_occurrence(self, task_type, stored)
        now = await self.now_ms()
        moved = await store.hasten(task_type, task_id, now)
        if moved is None:  # claimed meanwhile: it runs now anyway, but not by this call
            raise TaskNotFound(task_type, task_id, "due")
        return from_ms(now if moved else stored.due_ms)


async def _name_the_occurrence(client: ClientSide, task_type: str, stored: StoredTask) -> None:
    """Write the occurrence a series waits for into its record, when a version of duetime
    before calendar intervals wrote it without: the due time moves, the occurrence must not.
    (Every series written since names it.) A record that cannot be read is left to the
    worker, which files it in the dead letters with the reason."""
    if stored.record is None:
        return
    try:
        record = Record.decode(stored.record)
    except SchemaError:
        return
    if isinstance(record.trigger, Recurring) and record.occurrence_ms is None:
        named = replace(record, occurrence_ms=stored.due_ms).encode()
        store = await client.open()
        await store.schedule(task_type, [NewTask(stored.id, stored.due_ms, named)])
