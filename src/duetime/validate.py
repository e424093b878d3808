"""Checks at the door: names, ids, times, durations and payloads, each error naming its field.

Nothing here touches a store; a value that passes is safe to write.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import string
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from duetime.clock import MAX_MS, MIN_MS, MS, epoch_ms
from duetime.errors import PayloadError, ValidationError

#: The most partitions a type may have (a claim's token carries its partition below this).
MAX_PARTITIONS = 256
#: A task type or namespace: a letter, then letters, digits, ``_``, ``.`` or ``-``. Types
#: go into key names, so braces, colons and spaces are out.
NAME_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]{0,63}")
#: Task ids are free text up to this many UTF-8 bytes, without control characters.
MAX_ID_BYTES = 200
#: The longest end of an occurrence id (``"<id>@<due ms>"``, see :func:`is_occurrence_id`):
#: ``@`` and the longest epoch ms of the years 1 to 9999, sign included (16 bytes).
MAX_SUFFIX_BYTES = 1 + max(len(str(MIN_MS)), len(str(MAX_MS)))
#: The longest id a store may hand out, and every lookup accepts: a user's id with an
#: occurrence's end (216 bytes).
MAX_STORED_ID_BYTES = MAX_ID_BYTES + MAX_SUFFIX_BYTES
#: Why an id may not end like an occurrence id.
RESERVED_END = (
    "must not end in '@' and digits: duetime files occurrences under '<id>@<due ms>' "
    "(dead letters of a series, expiries, cron ticks), so such ids are reserved"
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: Default cap on a payload's JSON size (64 KiB); App(max_payload_bytes=...) changes it.
DEFAULT_MAX_PAYLOAD_BYTES = 64 * 1024
#: Nesting deeper than this is refused: nobody needs it, and it guards the decoder.
MAX_DEPTH = 32
#: The length of the ids :meth:`App.submit` picks: 71 random bits in 12 letters and
#: digits. Redis stores an id of up to 14 bytes in its smallest string allocation, so a
#: generated id costs no more than the shortest caller id (docs/performance.md, W4).
GENERATED_ID_LENGTH = 12
_ID_ALPHABET = string.digits + string.ascii_letters

_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_CONTAINERS = (dict, list, tuple)


def _make_fast_encode() -> Callable[[Any], str]:
    """The C encoder of ``_encoder``, built once: ``JSONEncoder.encode`` builds it again on
    every call, which costs more than the encoding of a small payload. Cycles need no
    check of their own: nesting is capped at MAX_DEPTH before anything is encoded."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython always has _json
        return _encoder.encode
    encode = make(
        None, _encoder.default, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )
    return lambda value: "".join(encode(value, 0))


_fast_encode = _make_fast_encode()


def dump_json(value: object) -> str:
    """Compact JSON text, as duetime stores it, of a value already known to be valid."""
    return _fast_encode(value)


def check_name(field: str, value: object) -> str:
    """Return ``value`` if it is a valid task type or namespace name."""
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, not {type(value).__name__}")
    if not NAME_PATTERN.fullmatch(value):
        raise ValidationError(
            field,
            f"{value!r} is not a valid name: 1 to 64 characters, a letter first, then "
            "letters, digits, '_', '.' or '-'",
        )
    return value


def check_id(value: object, field: str = "task_id", *, stored: bool = False) -> str:
    """Return ``value`` if it is a valid task id.

    A new id (a task's, an expiring key, a cron schedule's name) is UTF-8 text of at most
    :data:`MAX_ID_BYTES` bytes, and must not end like an occurrence id (``@`` and digits).
    With ``stored``, for calls that look up or act on a task, any id the store may hand out
    also passes: an occurrence id (up to :data:`MAX_STORED_ID_BYTES`), and one whose bytes
    are not UTF-8, which carries them as lone surrogates (see :mod:`duetime.stores.wire`).
    """
    # The common id, printable ASCII without an "@", short enough: nothing more to check.
    if type(value) is str and value.isascii() and value.isprintable() and "@" not in value:
        if 0 < len(value) <= MAX_ID_BYTES:
            return value
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, not {type(value).__name__}")
    if not value:
        raise ValidationError(field, "must not be empty")
    try:
        size = len(value.encode("utf-8", "surrogateescape" if stored else "strict"))
    except UnicodeEncodeError:
        raise ValidationError(
            field, "holds a lone surrogate: it is not text that UTF-8 can carry"
        ) from None
    limit = MAX_STORED_ID_BYTES if stored else MAX_ID_BYTES
    if size > limit:
        raise ValidationError(field, f"is longer than {limit} bytes")
    if _CONTROL.search(value):
        raise ValidationError(field, "must not contain control characters")
    if not stored and is_occurrence_id(value):
        raise ValidationError(field, RESERVED_END)
    return value


def is_occurrence_id(value: str) -> bool:
    """Whether ``value`` ends like an occurrence id, ``"<id>@<due ms>"``: ``@``, an optional
    ``-`` and ASCII digits. Such ends are reserved, so that no id a user picks is ever one
    duetime files an occurrence under (a series' dead letter, an expiry handed off, a cron
    tick run as a task of its own)."""
    _, at, tail = value.rpartition("@")
    if tail.startswith("-"):
        tail = tail[1:]
    return bool(at) and tail.isascii() and tail.isdigit()


def occurrence_id(task_id: str, occurrence_ms: int) -> str:
    """The stable id of an occurrence, ``"<task id>@<due ms>"``. A task that already has
    such an id (a dead letter filed for an occurrence, an expiry or cron tick handed off, a
    key event) keeps it, retried or run again: it is never suffixed twice. No id a user
    picks ends so (:func:`is_occurrence_id`), and a user's id has at most
    200 bytes, so this id has at most :data:`~duetime.validate.MAX_STORED_ID_BYTES`."""
    suffix = f"@{occurrence_ms}"
    return task_id if task_id.endswith(suffix) else task_id + suffix


def new_task_id() -> str:
    """A random task id: 12 letters and digits (no leading dash for a shell to misread)."""
    # 71 bits from the system's random source, as the secrets module would draw them
    # (which, with the hmac and hashlib it loads, costs a worker's start 1.5 ms).
    n = int.from_bytes(os.urandom(9)) >> 1
    letters = []
    for _ in range(GENERATED_ID_LENGTH):
        n, digit = divmod(n, 62)
        letters.append(_ID_ALPHABET[digit])
    return "".join(letters)


def check_int(field: str, value: object, *, minimum: int = 1) -> int:
    """Return ``value`` if it is an integer (not a bool) of at least ``minimum``."""
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValidationError(field, f"must be an integer of {minimum} or more")
    return value


#: The range of a task's priority: higher is claimed first among due tasks (docs/flow.md).
MIN_PRIORITY, MAX_PRIORITY = -100, 100


def check_priority(value: object, field: str = "priority") -> int:
    """Return ``value`` if it is a priority: an integer (not a bool) of -100 to 100."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValidationError(field, f"must be an integer, not {type(value).__name__}")
    if not MIN_PRIORITY <= value <= MAX_PRIORITY:
        raise ValidationError(
            field, f"must be between {MIN_PRIORITY} and {MAX_PRIORITY}, not {value}"
        )
    return value


def to_ms(field: str, value: object) -> int:
    """Epoch milliseconds of an aware datetime, rounded up: a task never runs before the
    moment it was asked for."""
    if type(value) is datetime and value.tzinfo is not None:
        try:
            return _aware_ms(value)  # a batch often shares one moment
        except ValueError:
            pass  # a tzinfo without an offset: explained below
    if not isinstance(value, datetime):
        raise ValidationError(field, f"must be a datetime, not {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError(
            field, "must be timezone-aware (a naive datetime has no single meaning)"
        )
    return epoch_ms(value)


@functools.lru_cache(maxsize=1024)
def _aware_ms(value: datetime) -> int:
    if value.utcoffset() is None:
        raise ValueError("no offset")
    return epoch_ms(value)


def duration_ms(field: str, value: object, *, allow_zero: bool = False) -> int:
    """Whole milliseconds of a timedelta (or a number of seconds), checked for sign."""
    if isinstance(value, timedelta):
        ms = value // MS
    elif isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        ms = round(value * 1000)
    else:
        raise ValidationError(
            field, f"must be a timedelta or a number of seconds, not {type(value).__name__}"
        )
    if ms < 0 or (ms == 0 and not allow_zero):
        raise ValidationError(field, "must be positive" + (" or zero" if allow_zero else ""))
    if ms > MAX_MS:
        raise ValidationError(field, "is longer than anything before the year 10000")
    return ms


def as_timedelta(field: str, value: timedelta | float | None) -> timedelta | None:
    """``value`` as a timedelta (a number is seconds), checked like :func:`duration_ms`."""
    if value is None or isinstance(value, timedelta):
        return value
    return timedelta(milliseconds=duration_ms(field, value))


def _check_containers(
    value: dict[str, Any] | list[Any] | tuple[Any, ...], path: str, depth: int
) -> None:
    """Check keys and depth; the JSON encoder checks every other value itself."""
    if depth > MAX_DEPTH:
        raise PayloadError("payload", f"nested deeper than {MAX_DEPTH} levels at {path}")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise PayloadError(
                    "payload", f"key {key!r} at {path} is not a string (JSON keys are strings)"
                )
            if isinstance(item, _CONTAINERS):
                _check_containers(item, f"{path}.{key}", depth + 1)
    else:
        for n, item in enumerate(value):
            if isinstance(item, _CONTAINERS):
                _check_containers(item, f"{path}[{n}]", depth + 1)


def encode_payload(payload: object, max_bytes: int, path: str = "payload") -> str:
    """The JSON text of ``payload`` if it is a JSON object within the size limit (``path``
    names it in the messages about what is inside it)."""
    if payload is None:
        return "{}"
    if not isinstance(payload, dict):
        raise PayloadError(
            "payload", f"must be a dict (a JSON object), not {type(payload).__name__}"
        )
    _check_containers(payload, path, 0)
    try:
        text = _fast_encode(payload)
        size = len(text) if text.isascii() else len(text.encode())
    except UnicodeEncodeError:
        raise PayloadError(
            "payload", "holds a lone surrogate: it is not text that UTF-8 can carry"
        ) from None
    except (TypeError, ValueError) as exc:
        raise PayloadError("payload", f"cannot be written as JSON: {exc}") from None
    if size > max_bytes:
        raise PayloadError("payload", f"is {size} bytes of JSON, over the limit of {max_bytes}")
    return text


def check_partitions(value: object) -> int:
    """Return ``value`` if it is a number of partitions a type may have."""
    if type(value) is not int or not 1 <= value <= MAX_PARTITIONS:
        raise ValidationError(
            "partitions", f"must be an integer from 1 to {MAX_PARTITIONS}, not {value!r}"
        )
    return value
