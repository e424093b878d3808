"""The fields of a cron schedule's record, checked as they are read back: each check raises
ValidationError naming the field, which the trigger turns into a SchemaError (the task's
data is bad, not the caller's input)."""

from __future__ import annotations

from duetime.clock import MAX_MS, in_range
from duetime.errors import ValidationError
from duetime.triggers.cron.policy import MAX_BUFFERED


def whole(doc: dict[str, object], key: str) -> int:
    """A whole number of 0 or more (0 when missing)."""
    value = doc.get(key, 0)
    if type(value) is not int or not 0 <= value <= MAX_MS:
        raise ValidationError("cron", f"stored field {key!r} is not a whole number of 0 or more")
    return value


def positive(doc: dict[str, object], key: str) -> int | None:
    """A whole number over 0, or None when missing."""
    if doc.get(key) is None:
        return None
    value = whole(doc, key)
    if value == 0:
        raise ValidationError("cron", f"stored field {key!r} is not over 0")
    return value


def time_ms(doc: dict[str, object], key: str) -> int | None:
    """A time (ms) duetime accepts, or None when missing."""
    value = doc.get(key)
    if value is not None and not (type(value) is int and in_range(value)):
        raise ValidationError("cron", f"stored field {key!r} is not a time (ms)")
    return value


def ticks(value: object) -> tuple[int, ...]:
    """The stored ticks that wait: a list of at most MAX_BUFFERED + 1 times (the tick being
    retried heads the others)."""
    if type(value) is not list or len(value) > MAX_BUFFERED + 1:
        raise ValidationError("cron", "stored field 'b' is not a list of waiting ticks")
    found = tuple(value)
    if not all(type(t) is int and 0 <= t <= MAX_MS for t in found):
        raise ValidationError("cron", "stored field 'b' holds a tick that is not a time")
    return found
