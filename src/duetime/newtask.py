"""A task as a producer gives it (:class:`~duetime.Task`), checked at the door and turned into
what the store writes."""

from __future__ import annotations

from duetime.clock import MAX_MS
from duetime.errors import ValidationError
from duetime.model import Task
from duetime.record import Record
from duetime.stores.base import NewTask
from duetime.stores.conditional import MODES
from duetime.triggers.periodic import Periodic
from duetime.validate import check_id, duration_ms, encode_payload, to_ms


def new_task(task: Task, now_ms: int | None, max_payload_bytes: int) -> NewTask:
    """Check one task (its type is checked by the caller) and build what the store writes.

    ``now_ms`` may be None when the task has ``at``.

    Raises:
        ValidationError: naming the bad field.
    """
    check_id(task.task_id)
    if task.at is not None and task.delay is not None:
        raise ValidationError("at", "give either at or delay, not both")
    if task.at is not None:
        due = to_ms("at", task.at)
    else:
        assert now_ms is not None
        due = now_ms + (
            0 if task.delay is None else duration_ms("delay", task.delay, allow_zero=True)
        )
    if due > MAX_MS:
        raise ValidationError("delay", "puts the task past the year 9999")
    payload = encode_payload(task.payload, max_payload_bytes)
    every = None if task.every is None else duration_ms("every", task.every)
    until = None
    if task.until is not None:
        if every is None:
            raise ValidationError("until", "only applies to periodic tasks (with every)")
        until = to_ms("until", task.until)
        if until < due:
            raise ValidationError("until", "is before the first due time")
    trigger = None if every is None else Periodic(every, until)
    record = Record(payload, trigger, unique_ms=unique_ms(task))
    return NewTask(task.task_id, due, record.encode())


def unique_ms(task: Task) -> int:
    """The task's ``unique_for`` in whole ms (0 for none), once its ``if_exists`` and
    ``unique_for`` are checked.

    Raises:
        ValidationError: naming the bad field.
    """
    if task.if_exists not in MODES:
        raise ValidationError("if_exists", "must be 'replace', 'keep' or 'merge'")
    return 0 if task.unique_for is None else duration_ms("unique_for", task.unique_for)
