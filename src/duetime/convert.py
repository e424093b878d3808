"""Conversions at the edges: a Task to what the store writes, a stored task to a TaskInfo,
options to a TaskPolicy."""

from __future__ import annotations

from datetime import timedelta

from duetime.codec import (
    check_id,
    decode_record,
    duration_ms,
    encode_payload,
    encode_record,
    from_ms,
    to_ms,
)
from duetime.errors import SchemaError, ValidationError
from duetime.model import (
    DEFAULT_LEASE,
    DEFAULT_RETRIES,
    Backoff,
    Delivery,
    Task,
    TaskInfo,
    TaskPolicy,
)
from duetime.stores.base import NewTask, StoredTask


def to_new_task(task: Task, now_ms: int | None, max_payload_bytes: int) -> NewTask:
    """Validate one task (its type is checked by the caller) and build what the store writes.

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
    payload = encode_payload(task.payload, max_payload_bytes)
    every = None if task.every is None else duration_ms("every", task.every)
    until = None
    if task.until is not None:
        if every is None:
            raise ValidationError("until", "only applies to periodic tasks (with every)")
        until = to_ms("until", task.until)
        if until < due:
            raise ValidationError("until", "is before the first due time")
    return NewTask(task.task_id, due, encode_record(payload, every, until))


def build_policy(
    concurrency: int,
    timeout: timedelta | float | None,
    retries: int | None,
    backoff: Backoff | None,
    lease: timedelta | float,
    max_stalls: int,
    delivery: Delivery,
) -> TaskPolicy:
    if retries is None:
        retries = 0 if delivery == "at_most_once" else DEFAULT_RETRIES
    return TaskPolicy(
        concurrency=concurrency,
        timeout=_as_timedelta("timeout", timeout),
        retries=retries,
        backoff=backoff or Backoff(),
        lease=_as_timedelta("lease", lease) or DEFAULT_LEASE,
        max_stalls=max_stalls,
        delivery=delivery,
    )


def _as_timedelta(field_name: str, value: timedelta | float | None) -> timedelta | None:
    if value is None or isinstance(value, timedelta):
        return value
    return timedelta(milliseconds=duration_ms(field_name, value))


def to_info(task_type: str, stored: StoredTask) -> TaskInfo:
    payload = every = until = None
    failures = 0
    error = stored.error
    if stored.record is not None:
        try:
            record = decode_record(stored.record)
        except SchemaError as exc:
            error = f"{error}; {exc}" if error else str(exc)
        else:
            payload = record.payload
            every = None if record.every_ms is None else timedelta(milliseconds=record.every_ms)
            until = None if record.until_ms is None else from_ms(record.until_ms)
            failures = record.failures
    running = stored.state == "running"
    lease = from_ms(stored.score_ms) if running else None
    attempts = failures + stored.stalls + (1 if running else 0)
    return TaskInfo(
        task_type,
        stored.id,
        stored.state,
        from_ms(stored.due_ms),
        payload,
        every,
        until,
        attempts,
        error,
        lease,
    )
