"""The stored record of a task: the one place that encodes and decodes it.

A record is a compact JSON object, readable in the store::

    {"p": <payload>, <the trigger's fields>, "o": <occurrence due ms>, "f": <failures>,
     "t": <traceback>, "q": <unique window ms>, "md": <metadata>}

Only ``p`` is always there. ``o`` is the due time of the occurrence a retry (or a cron
schedule's next tick) belongs to, so that the occurrence id stays the same however often a
retry moves the task; ``f`` counts the failed attempts of that occurrence so far; ``t`` is
the traceback of the last failed attempt, written only by a failure (a retry or a dead
letter) and bounded (:func:`duetime.worker.outcome.trace`). A trigger
(:mod:`duetime.triggers.kinds`) writes fields of its own, such as ``"e"`` and ``"u"`` for an
``every`` series or ``"c"`` for a cron schedule. ``q`` marks a task scheduled with
``unique_for``: the window, in ms, for which its finish (done or dead) is remembered, so that
the worker's settle knows what to remember without reading anything more. ``md`` is the
task's metadata (``meta=``, :mod:`duetime.meta`), an object kept with every retry,
occurrence and dead letter of the task; a record without it (older ones) has none.

A decoded record keeps the payload's JSON text as it was stored, so that what a handler
does to its own copy of the payload never reaches a retry, a dead letter or the next
occurrence.

This is also where data read from the store is judged, per task: a record that is not
UTF-8, not JSON, of the wrong shape or with values out of range (times, periods, attempts)
raises :class:`~duetime.errors.SchemaError` naming what is wrong, as does a claim whose id
or due time the store could not read (:func:`check_claimed`). The worker sends that task
alone to the dead letters with the reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

try:  # the fast JSON parser (a dependency on CPython); the standard library's otherwise
    import msgspec
except ImportError:  # pragma: no cover - every CPython install has it
    msgspec = None  # type: ignore[assignment]

from duetime.clock import MAX_MS, in_range
from duetime.errors import SchemaError
from duetime.stores.base import Claim
from duetime.triggers.base import Next, Trigger
from duetime.triggers.kinds import kind_of
from duetime.validate import dump_json


def _not_json(constant: str) -> Any:
    # Python reads NaN and Infinity, which are not JSON; duetime never writes them.
    raise ValueError(f"{constant} is not JSON")


_decoder = json.JSONDecoder(parse_constant=_not_json)
_scan = _decoder.scan_once  # type: ignore[attr-defined]
#: How every record duetime writes begins: the payload comes first.
_HEAD = '{"p":'
_AFTER_HEAD = len(_HEAD)
#: Where a plain record (``{"p":<payload>}``) holds its payload's text.
PAYLOAD = slice(_AFTER_HEAD, -1)


def one_off(payload_json: str) -> str:
    """The record of a one-off task's first attempt: its payload alone (the common record,
    written by the producer's hot path without a :class:`Record`)."""
    return _HEAD + payload_json + "}"


#: More failed attempts than this at one occurrence is not a count duetime wrote.
MAX_FAILURES = 2**31
#: The fast parser of a plain record's payload, or None. It reads what the standard
#: library's reads (integers of any size exactly; no NaN, no Infinity), or refuses it.
_fast_json: Any = None if msgspec is None else msgspec.json.Decoder().decode
#: What it raises for text it does not read (UnicodeEncodeError, a ValueError, for text
#: that is not UTF-8); the standard library's parser then says what is wrong.
_FAST_ERRORS: tuple[type[Exception], ...] = (ValueError,)
if msgspec is not None:
    _FAST_ERRORS += (msgspec.DecodeError,)


# Not frozen: a frozen dataclass costs three times as much to make, and a record is made
# for every task on the hot paths. Nothing changes a record once it is made: see revived().
@dataclass(slots=True)
class Record:
    """A task's stored record, decoded.

    Attributes:
        payload_json: the payload's JSON text, as stored.
        trigger: what makes the task due again (None: it runs once).
        occurrence_ms: the occurrence it belongs to, when that is not its due time.
        failures: failed attempts at that occurrence so far.
        traceback: the traceback of the last failed attempt, if it had one.
        unique_ms: for a task scheduled with ``unique_for``, how long its finish is
            remembered (0: not remembered).
        meta_json: the metadata's JSON text (None: none).
    """

    payload_json: str
    trigger: Trigger | None = None
    occurrence_ms: int | None = None
    failures: int = 0
    traceback: str | None = None
    unique_ms: int = 0
    _payload: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    meta_json: str | None = None

    @property
    def payload(self) -> dict[str, Any]:
        """The payload, decoded once: the dict a handler is given (and may change)."""
        payload = self._payload
        if payload is None:
            payload = self._payload = json.loads(self.payload_json)
        return payload

    def encode(self) -> str:
        """The record's text, as stored."""
        if self.trigger is None and self.occurrence_ms is None and not self.failures:
            if self.traceback is None and not self.unique_ms and self.meta_json is None:
                return one_off(self.payload_json)
        parts = [_HEAD, self.payload_json]
        if self.trigger is not None:
            parts.append(self.trigger.fields())
        if self.occurrence_ms is not None:
            parts.append(f',"o":{self.occurrence_ms}')
        if self.failures:
            parts.append(f',"f":{self.failures}')
        if self.traceback is not None:
            parts.append(',"t":' + json.dumps(self.traceback, ensure_ascii=False))
        if self.unique_ms:
            parts.append(f',"q":{self.unique_ms}')
        if self.meta_json is not None:
            parts.append(',"md":' + self.meta_json)
        parts.append("}")
        return "".join(parts)

    @classmethod
    def following(cls, nxt: Next) -> Record:
        """The record of what a trigger says comes next."""
        return cls(nxt.payload_json, nxt.trigger, nxt.occurrence_ms)

    def revived(self) -> Record:
        """The record of a dead task run again by hand: its attempts counted afresh, and the
        last failure's traceback gone with them."""
        return replace(self, failures=0, traceback=None, _payload=None)

    @classmethod
    def decode(cls, text: str) -> Record:
        """Parse a stored record.

        Raises:
            SchemaError: naming what is wrong with it.
        """
        payload = plain_payload(text)
        if payload is not None:
            return cls(text[PAYLOAD], None, None, 0, None, 0, payload)
        if not text.isascii():
            try:
                text.encode()
            except UnicodeEncodeError:  # bytes that are not UTF-8, as the store read them
                raise SchemaError("record is not UTF-8 text") from None
        if text.startswith(_HEAD):
            try:
                payload, end = _scan(text, _AFTER_HEAD)
            except (StopIteration, ValueError, RecursionError):
                payload, end = None, 0
            if type(payload) is dict:
                if end == len(text) - 1 and text[end] == "}":
                    return cls(text[_AFTER_HEAD:end], None, None, 0, None, 0, payload)  # common
                if text.startswith(",", end):
                    rest = _parse("{" + text[end + 1 :])
                    return cls._with_fields(text[_AFTER_HEAD:end], payload, rest)
        # Not as duetime writes records (spaces, another order): read it the long way.
        doc = _parse(text)
        payload = doc.pop("p", None) if type(doc) is dict else None
        if type(payload) is not dict:
            raise SchemaError("record is not an object with a payload object under 'p'")
        try:
            payload_json = dump_json(payload)
        except (ValueError, RecursionError) as exc:
            raise SchemaError(f"record's payload cannot be written back as JSON: {exc}") from None
        return cls._with_fields(payload_json, payload, doc)

    @classmethod
    def _with_fields(cls, payload_json: str, payload: dict[str, Any], doc: Any) -> Record:
        if type(doc) is not dict:
            raise SchemaError("record is not an object with a payload object under 'p'")
        kind = kind_of(doc)
        trigger = None if kind is None else kind.from_record(doc)
        occurrence, failures, trace = doc.get("o"), doc.get("f", 0), doc.get("t")
        if occurrence is not None and not (type(occurrence) is int and in_range(occurrence)):
            raise SchemaError("field 'o' of the record is not a time (ms) of the years 1-9999")
        if not (type(failures) is int and 0 <= failures < MAX_FAILURES):
            raise SchemaError("field 'f' of the record is not a count of failed attempts")
        if trace is not None and type(trace) is not str:
            raise SchemaError("field 't' of the record is not text")
        unique = doc.get("q", 0)
        if not (type(unique) is int and 0 <= unique <= MAX_MS):
            raise SchemaError("field 'q' of the record is not a window (ms)")
        meta = doc.get("md")
        if meta is not None and type(meta) is not dict:
            raise SchemaError("field 'md' of the record is not an object")
        meta_json = None if not meta else dump_json(meta)
        return cls(payload_json, trigger, occurrence, failures, trace, unique, payload, meta_json)


def plain_payload(text: str) -> dict[str, Any] | None:
    """The payload of a one-off task's first attempt, ``{"p":<payload>}`` (the hot path),
    read by the fast parser; None for any other record. The payload is all between the
    head and the last brace (its text: ``text[PAYLOAD]``), and reading that alone fails for
    every other record (a field after the payload, a second "p"). A record whose last
    field is not an object (a series', a retry's) is not tried."""
    if _fast_json is None or not text.startswith(_HEAD) or not text.endswith("}}"):
        return None
    try:
        payload = _fast_json(text[PAYLOAD])
    except _FAST_ERRORS:
        return None  # not JSON, or not UTF-8: the long way says what is wrong
    return payload if type(payload) is dict else None


def _parse(text: str) -> Any:
    try:
        return _decoder.decode(text)
    except (ValueError, RecursionError) as exc:
        raise SchemaError(f"record is not valid JSON: {exc}") from None


def check_claimed(claim: Claim) -> None:
    """Check what the store said of a claimed task beside its record.

    Raises:
        SchemaError: its id is not UTF-8 text, or its due time is not a time.
    """
    if not claim.id.isascii():
        try:
            claim.id.encode()
        except UnicodeEncodeError:
            raise SchemaError("its id is not UTF-8 text") from None
    if not in_range(claim.due_ms):
        raise SchemaError("its due time is not a time (ms) of the years 1-9999")
