"""A task as a producer gives it (:class:`~duetime.Task`), checked at the door and turned into
what the store writes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from duetime.clock import MAX_MS, lead_us
from duetime.errors import ValidationError
from duetime.meta import encode_meta
from duetime.model import Task
from duetime.record import Record, one_off
from duetime.stores.base import NewTask
from duetime.stores.conditional import MODES
from duetime.validate import (
    check_id,
    check_int,
    check_priority,
    duration_ms,
    encode_payload,
    to_ms,
)

if TYPE_CHECKING:
    from duetime.triggers.periodic import Periodic

#: The nominal length of a calendar step of a day and of a month, kept in the record's
#: period for versions of duetime without calendar intervals (triggers.periodic).
DAY_MS = 86_400_000
MONTH_MS = 30 * DAY_MS


def new_task(
    task: Task, now_ms: int | None, max_payload_bytes: int, default_priority: int = 0
) -> NewTask:
    """Check one task (its type is checked by the caller) and build what the store writes.

    ``now_ms`` may be None when the task has ``at``; ``default_priority`` is its type's,
    for a task without a priority of its own.

    Raises:
        ValidationError: naming the bad field.
    """
    check_id(task.task_id)
    priority = default_priority if task.priority is None else check_priority(task.priority)
    group = "" if task.group is None else check_id(task.group, "group")
    if task.at is not None and task.delay is not None:
        raise ValidationError("at", "give either at or delay, not both")
    lead = 0
    if task.at is not None:
        due = to_ms("at", task.at)
        lead = lead_us(task.at, due)  # the moment asked for, to the microsecond
    else:
        assert now_ms is not None
        due = now_ms + (
            0 if task.delay is None else duration_ms("delay", task.delay, allow_zero=True)
        )
    if due > MAX_MS:
        raise ValidationError("delay", "puts the task past the year 9999")
    payload = encode_payload(task.payload, max_payload_bytes)
    trigger = _series(task, due)
    unique = unique_ms(task)
    meta = encode_meta(task.meta)
    if trigger is None and not unique and meta is None:
        return NewTask(task.task_id, due, one_off(payload), priority, group, lead)
    # A series' record names the occurrence it waits for (see triggers.periodic).
    occurrence = None if trigger is None else due
    record = Record(payload, trigger, occurrence, unique_ms=unique, meta_json=meta)
    return NewTask(task.task_id, due, record.encode(), priority, group, lead)


def _series(task: Task, due_ms: int) -> Periodic | None:
    """The trigger of a periodic task (None for a one-off), checked. What runs series is
    imported by the first one."""
    every, until, limit = task.every, task.until, task.limit
    if every is None:
        if until is not None or limit is not None:
            field = "until" if until is not None else "limit"
            raise ValidationError(field, "only applies to periodic tasks (with every)")
        return None
    from duetime.interval import CalendarInterval, CalendarSeries
    from duetime.triggers.periodic import Periodic

    calendar = None
    if isinstance(every, CalendarInterval):
        calendar = CalendarSeries.starting(every, due_ms)
        every_ms = min(every.step_days * DAY_MS or every.step_months * MONTH_MS, MAX_MS)
    else:
        every_ms = duration_ms("every", every)
    until_ms = None
    if until is not None:
        until_ms = to_ms("until", until)
        if until_ms < due_ms:
            raise ValidationError("until", "is before the first due time")
    if limit is not None:
        check_int("limit", limit)
    return Periodic(every_ms, until_ms, calendar, limit)


def unique_ms(task: Task) -> int:
    """The task's ``unique_for`` in whole ms (0 for none), once its ``if_exists`` and
    ``unique_for`` are checked.

    Raises:
        ValidationError: naming the bad field.
    """
    if task.if_exists not in MODES:
        raise ValidationError("if_exists", "must be 'replace', 'keep' or 'merge'")
    return 0 if task.unique_for is None else duration_ms("unique_for", task.unique_for)
