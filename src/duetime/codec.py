"""Validation of what comes in at the door, and the JSON form of a stored task record.

A task's record is a compact JSON object, readable in the store::

    {"p": <payload>, "e": <every ms>, "u": <until ms>, "o": <occurrence due ms>,
     "f": <failures>, "c": <cron schedule>}

Only ``p`` is always there. ``o`` is the due time of the occurrence a retry belongs to, so
that the occurrence id stays the same however often a retry moves the task; ``f`` counts
the failed attempts of that occurrence so far. ``c`` makes the task a cron schedule (see
:class:`duetime.cron.CronSpec`); ``o`` is then the tick it waits for.
"""

from __future__ import annotations

import functools
import json
import math
import re
import secrets
import string
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from duetime.errors import PayloadError, SchemaError, ValidationError

#: A task type or namespace: a letter, then letters, digits, ``_``, ``.`` or ``-``. Types
#: go into key names, so braces, colons and spaces are out.
NAME_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]{0,63}")
#: Task ids are free text up to this many UTF-8 bytes, without control characters.
MAX_ID_BYTES = 200
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: Default cap on a payload's JSON size (64 KiB); App(max_payload_bytes=...) changes it.
DEFAULT_MAX_PAYLOAD_BYTES = 64 * 1024
#: Nesting deeper than this is refused: nobody needs it, and it guards the decoder.
MAX_DEPTH = 32

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
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
_decoder = json.JSONDecoder()
_scan = _decoder.scan_once  # type: ignore[attr-defined]


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


_ID_ALPHABET = string.digits + string.ascii_letters
#: The length of the ids :meth:`App.submit` picks: 71 random bits in 12 letters and digits.
#: A task's id is stored twice in Redis (due set and records), each copy in a 16-byte
#: allocation up to 14 bytes of id (measured); a longer id costs about 32 B more a task
#: from 15 bytes and 64 B more from 29.
GENERATED_ID_LENGTH = 12


def new_task_id() -> str:
    """A random task id: 12 letters and digits (no leading dash for a shell to misread)."""
    n = secrets.randbits(71)
    letters = []
    for _ in range(GENERATED_ID_LENGTH):
        n, digit = divmod(n, 62)
        letters.append(_ID_ALPHABET[digit])
    return "".join(letters)


def check_id(value: object, field: str = "task_id") -> str:
    """Return ``value`` if it is a valid task id."""
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, not {type(value).__name__}")
    if not value:
        raise ValidationError(field, "must not be empty")
    if len(value.encode()) > MAX_ID_BYTES:
        raise ValidationError(field, f"is longer than {MAX_ID_BYTES} bytes")
    if _CONTROL.search(value):
        raise ValidationError(field, "must not contain control characters")
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
    return -((_EPOCH - value) // _MS)


@functools.lru_cache(maxsize=1024)
def _aware_ms(value: datetime) -> int:
    if value.utcoffset() is None:
        raise ValueError("no offset")
    return -((_EPOCH - value) // _MS)


@functools.lru_cache(maxsize=1024)
def from_ms(ms: int) -> datetime:
    """The aware UTC datetime of epoch milliseconds (cached: tasks often share due times)."""
    return _EPOCH + timedelta(milliseconds=ms)  # integer arithmetic: exact in any year


def duration_ms(field: str, value: object, *, allow_zero: bool = False) -> int:
    """Whole milliseconds of a timedelta (or a number of seconds), checked for sign."""
    if isinstance(value, timedelta):
        ms = value // _MS
    elif isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        ms = round(value * 1000)
    else:
        raise ValidationError(
            field, f"must be a timedelta or a number of seconds, not {type(value).__name__}"
        )
    if ms < 0 or (ms == 0 and not allow_zero):
        raise ValidationError(field, "must be positive" + (" or zero" if allow_zero else ""))
    return ms


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


def encode_payload(payload: object, max_bytes: int) -> str:
    """The JSON text of ``payload`` if it is a JSON object within the size limit."""
    if payload is None:
        return "{}"
    if not isinstance(payload, dict):
        raise PayloadError(
            "payload", f"must be a dict (a JSON object), not {type(payload).__name__}"
        )
    _check_containers(payload, "payload", 0)
    try:
        text = _fast_encode(payload)
    except (TypeError, ValueError) as exc:
        raise PayloadError("payload", f"cannot be written as JSON: {exc}") from None
    if len(text) * 4 > max_bytes and len(text.encode()) > max_bytes:
        raise PayloadError(
            "payload", f"is {len(text.encode())} bytes of JSON, over the limit of {max_bytes}"
        )
    return text


def dump_json(value: dict[str, Any]) -> str:
    """Compact JSON text of a value already known to be valid."""
    return _fast_encode(value)


def encode_record(
    payload_json: str,
    every_ms: int | None = None,
    until_ms: int | None = None,
    occurrence_ms: int | None = None,
    failures: int = 0,
    cron: dict[str, Any] | None = None,
) -> str:
    """The stored record of a task, from its payload's JSON text."""
    parts = ['{"p":', payload_json]
    if every_ms is not None:
        parts.append(f',"e":{every_ms}')
    if until_ms is not None:
        parts.append(f',"u":{until_ms}')
    if occurrence_ms is not None:
        parts.append(f',"o":{occurrence_ms}')
    if failures:
        parts.append(f',"f":{failures}')
    if cron is not None:
        parts.append(',"c":' + _fast_encode(cron))
    parts.append("}")
    return "".join(parts)


class Record(NamedTuple):
    """A stored task record, decoded."""

    payload: dict[str, Any]
    every_ms: int | None = None
    until_ms: int | None = None
    occurrence_ms: int | None = None
    failures: int = 0
    cron: dict[str, Any] | None = None


def _opt_int(doc: dict[str, Any], key: str) -> int | None:
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise SchemaError(f"field {key!r} of the record is not an integer")
    return value


def decode_record(text: str) -> Record:
    """Parse a stored record. Raises SchemaError naming what is wrong with it."""
    try:
        # scan_once parses the object that starts the text; records are written without
        # surrounding whitespace, so anything else means a record written by something else.
        try:
            doc, end = _scan(text, 0)
        except StopIteration:
            end = -1
        if end != len(text):
            doc = _decoder.decode(text)
    except (ValueError, RecursionError) as exc:
        raise SchemaError(f"record is not valid JSON: {exc}") from None
    payload = doc.get("p") if type(doc) is dict else None
    if type(payload) is not dict:
        raise SchemaError("record is not an object with a payload object under 'p'")
    if len(doc) == 1:  # the common case: a one-off task's first attempt
        return Record(payload)
    cron = doc.get("c")
    if cron is not None and type(cron) is not dict:
        raise SchemaError("field 'c' of the record is not an object")
    failures = _opt_int(doc, "f") or 0
    return Record(
        payload, _opt_int(doc, "e"), _opt_int(doc, "u"), _opt_int(doc, "o"), failures, cron
    )
