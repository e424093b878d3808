"""What stores read, turned into the Store protocol's values whatever the bytes: never an
exception for a value's sake.

- **Text** (ids, records, errors) is decoded from UTF-8 with ``surrogateescape``: bytes that
  are not UTF-8 become lone surrogates (U+DC80 to U+DCFF), so nothing is lost, and the same
  bytes go back to the store when the text is written again (:func:`to_bytes`). Whether
  text is valid is decided above the store, in :mod:`duetime.record`, per task.
- **Times** are whole epoch milliseconds; a value that is not a finite number becomes
  :data:`UNREADABLE_MS`, which lies outside every time duetime accepts, so that the task it
  belongs to goes to the dead letters with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from duetime.stores.base import State, StoredTask

#: A stored time that could not be read as a number: below every valid time.
UNREADABLE_MS = -(2**63)


def text(raw: object) -> str:
    """A stored value as text; bytes that are not UTF-8 survive as lone surrogates."""
    if type(raw) is bytes:  # what the stores read, first: this is on the claim path
        return raw.decode("utf-8", "surrogateescape")
    if isinstance(raw, str):
        return raw
    if isinstance(raw, bytearray | memoryview):
        return bytes(raw).decode("utf-8", "surrogateescape")
    return str(raw)


def maybe_text(raw: object) -> str | None:
    """:func:`text`, keeping None (a missing value) as None."""
    return None if raw is None else text(raw)


def to_bytes(value: str) -> bytes:
    """The bytes a text read by :func:`text` came from (anything else as UTF-8, with lone
    surrogates outside U+DC80..U+DCFF written as escapes)."""
    try:
        return value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace")


def param(value: str | None) -> str | bytes | None:
    """Text as a parameter for a driver that encodes text strictly: the bytes it was read
    from when it holds lone surrogates, else the text itself."""
    if value is None or value.isascii() or is_utf8(value):
        return value
    return to_bytes(value)


def is_utf8(value: str) -> bool:
    """Whether UTF-8 can carry ``value`` (it holds no lone surrogate)."""
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def ms(raw: Any) -> int:
    """A stored time or count as a whole number, or UNREADABLE_MS."""
    try:
        whole: int = int(raw)  # an int, or digits as bytes or text: the claim path
        return whole
    except (TypeError, ValueError, OverflowError):
        pass
    try:
        number = float(text(raw))
    except ValueError:
        return UNREADABLE_MS
    return int(number) if math.isfinite(number) else UNREADABLE_MS


def due_ms(raw: object) -> int:
    """A stored due time as a whole ms, rounded up: a Redis score may hold one to the
    microsecond (a task never starts before it)."""
    if type(raw) is not float:
        try:
            whole: int = int(raw)  # type: ignore[call-overload]
            return whole
        except (TypeError, ValueError, OverflowError):
            pass
    try:
        number = raw if type(raw) is float else float(text(raw))
    except ValueError:
        return UNREADABLE_MS
    return math.ceil(number) if math.isfinite(number) else UNREADABLE_MS


def readable(raw: object) -> int | None:
    """A stored time as whole milliseconds, or None when it is missing or unreadable."""
    if raw is None or raw == b"" or raw == "":
        return None
    value = ms(raw)
    return None if value == UNREADABLE_MS else value


def count(raw: object) -> int:
    """A stored counter (stalls): 0 when missing or unreadable."""
    value = 0 if raw is None else ms(raw)
    return value if value >= 0 else 0


def stored_task(
    task_id: object,
    state: State,
    score: object,
    due: object,
    record: object,
    stalls: object,
    error: object,
    priority: object = 0,
    group: object = None,
) -> StoredTask:
    """A stored task from the values a store read, whatever they hold (a priority that is
    not a number reads as 0; a missing group as "")."""
    return StoredTask(
        text(task_id),
        state,
        ms(score),
        ms(due),
        maybe_text(record),
        count(stalls),
        maybe_text(error),
        level(priority),
        "" if group is None else text(group),
    )


def level(raw: object) -> int:
    """A stored priority: 0 when missing or unreadable."""
    if raw is None or raw == b"" or raw == "":
        return 0
    value = ms(raw)
    return value if -1000 < value < 1000 else 0


def stored_row(row: Sequence[object]) -> StoredTask | None:
    """A stored task from a SQL store's row of ``get`` (``id, due, token, claimed due,
    lease deadline, dead, record, stalls, error, priority``, then its group if the store
    reads it): due if due (even while a run holds a lease), else running, else dead; None
    when it is none of them."""
    task_id, due, token, claimed_due, deadline, dead, record, stalls, error, prio = row[:10]
    group = row[10] if len(row) > 10 else None
    if due is not None:
        return stored_task(task_id, "due", due, due, record, stalls, error, prio, group)
    if token is not None:
        return stored_task(
            task_id, "running", deadline, claimed_due, record, stalls, error, prio, group
        )
    if dead is not None:
        return stored_task(task_id, "dead", dead, dead, record, stalls, error, prio, group)
    return None
