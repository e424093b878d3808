"""Periodic tasks: ``every`` a period or a calendar interval, until ``until``, at most
``limit`` times; the reschedule hook, and deep merge.

Stored as the record fields ``"e"`` (the period, ms) and ``"u"`` (the last due time, ms);
a calendar interval adds ``"k"`` (its counts and zone, and ``"a"``: the wall-clock time of
the first occurrence, ``"2031-01-05T09:00:00"``, that the steps count from, so every worker
and every restart computes the same occurrences; a reschedule hook that moves an
occurrence moves it there); a limit adds ``"n"`` (the limit) and
``"r"`` (the occurrences that ran so far). The record's occurrence (``"o"``) is the one the
task waits for.
"""

from __future__ import annotations

import copy
import json
import logging
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, ClassVar
from zoneinfo import ZoneInfo

from duetime.clock import MAX_MS, from_ms, in_range
from duetime.errors import SchemaError, ValidationError
from duetime.interval import CalendarInterval, CalendarSeries, zone
from duetime.model import Reschedule
from duetime.stores.base import Outcome
from duetime.triggers.base import Job, Next
from duetime.validate import dump_json, encode_payload, to_ms

log = logging.getLogger(__name__)

#: The highest limit (and count of occurrences run) a record may hold.
MAX_COUNT = 2**53

# Keys that JavaScript merges skip, to keep prototype pollution out. They mean nothing in
# Python, but skipping them keeps payloads shared with JavaScript code consistent.
_UNSAFE_KEYS = frozenset({"__proto__", "constructor", "prototype"})


@dataclass(frozen=True, slots=True)
class Due:
    """The next occurrence of a series: when, and how many were skipped to get there."""

    due_ms: int
    skipped: int


@dataclass(frozen=True, slots=True)
class Periodic:
    """A series: each occurrence is due ``every_ms`` after the previous one's due time, or,
    with ``calendar``, the series' wall-clock time a calendar step later.

    Attributes:
        every_ms: the fixed period; with ``calendar``, the step's nominal length, read only
            by versions of duetime without calendar intervals (which then run the series at
            this fixed period rather than end it).
        until_ms: the last time an occurrence may be due.
        calendar: the calendar step and the first occurrence's wall-clock time (the anchor).
        limit: the most occurrences the series runs (done or dead), with ``ran`` so far.
    """

    KEY: ClassVar[str] = "e"
    NAME: ClassVar[str] = "periodic"
    every_ms: int
    until_ms: int | None = None
    calendar: CalendarSeries | None = None
    limit: int | None = None
    ran: int = 0

    @classmethod
    def from_record(cls, doc: dict[str, Any]) -> Periodic:
        every, until = doc.get("e"), doc.get("u")
        if not (type(every) is int and 0 < every <= MAX_MS):
            raise SchemaError("field 'e' of the record is not a period (ms) over 0")
        if until is not None and not (type(until) is int and in_range(until)):
            raise SchemaError("field 'u' of the record is not a time (ms) of the years 1-9999")
        if "k" not in doc and "n" not in doc:
            return cls(every, until)  # the common case: a fixed period without a limit
        limit, ran = doc.get("n"), doc.get("r", 0)
        if limit is not None and not (type(limit) is int and 0 < limit <= MAX_COUNT):
            raise SchemaError("field 'n' of the record is not a limit of 1 or more")
        if not (type(ran) is int and 0 <= ran <= MAX_COUNT):
            raise SchemaError("field 'r' of the record is not a count of occurrences")
        calendar = None if doc.get("k") is None else _calendar(doc["k"])
        return cls(every, until, calendar, limit, ran)

    def fields(self) -> str:
        until = "" if self.until_ms is None else f',"u":{self.until_ms}'
        text = f',"e":{self.every_ms}{until}'
        if self.calendar is not None:
            doc = self.calendar.interval.to_json()
            doc["a"] = self.calendar.anchor_text()
            text += ',"k":' + dump_json(doc)
        if self.limit is not None:
            text += f',"n":{self.limit}' + (f',"r":{self.ran}' if self.ran else "")
        return text

    def shown(self) -> dict[str, Any]:
        until = None if self.until_ms is None else from_ms(self.until_ms)
        every: Any = timedelta(milliseconds=self.every_ms)
        if self.calendar is not None:
            every = self.calendar.interval
        return {"every": every, "until": until}

    def _after(self, occurrence_ms: int) -> int | None:
        """The occurrence after ``occurrence_ms`` (None past the year 9999)."""
        if self.calendar is None:
            return occurrence_ms + self.every_ms
        return self.calendar.after(occurrence_ms)

    def _latest(self, occurrence_ms: int, by_ms: int) -> tuple[int, int]:
        """The last occurrence due by ``by_ms``, and how many steps past ``occurrence_ms`` it
        is (the one after ``occurrence_ms`` is due by then)."""
        if self.calendar is None:
            periods = (by_ms - occurrence_ms) // self.every_ms
            return occurrence_ms + periods * self.every_ms, periods
        return self.calendar.latest(occurrence_ms, by_ms)

    def next_after(self, occurrence_ms: int, now_ms: int) -> Due | None:
        """The next occurrence after ``occurrence_ms``, or None when the series is over.

        Occurrences keep their phase: each is due ``every`` after the previous one, never
        ``every`` after the run ended. When some are already past (workers were down, or a
        run took longer than the period), they fold into one due now: the latest of them.
        """
        due = self._after(occurrence_ms)
        skipped = 0
        if due is not None and due <= now_ms:
            due, periods = self._latest(occurrence_ms, now_ms)
            skipped = periods - 1
        if due is None or (self.until_ms is not None and due > self.until_ms) or due > MAX_MS:
            return None
        return Due(due, skipped)

    def latest_due(self, occurrence_ms: int, now_ms: int) -> Due:
        """The occurrence a claim of ``occurrence_ms`` runs: the latest one due by
        ``now_ms`` (within ``until``), and how many before it are skipped.

        A claim comes late when workers were down or the task was scheduled in the past:
        the occurrences due meanwhile fold into one run, of the latest (its phase kept), so
        a series due years ago runs once now, not once for its first occurrence and again
        at once for the latest.
        """
        following = self._after(occurrence_ms)
        if following is None or following > now_ms:  # no later one is due: the usual case
            return Due(occurrence_ms, 0)
        # Past the end, the last occurrence within it runs, and the series ends after.
        horizon = now_ms if self.until_ms is None else min(now_ms, self.until_ms)
        if following > horizon:
            return Due(occurrence_ms, 0)
        return Due(*self._latest(occurrence_ms, horizon))

    def upcoming(self, pending_ms: int, now_ms: int, count: int, *, running: bool) -> list[int]:
        """The next ``count`` due times (fewer when the series ends first), as the worker
        will run them: from the occurrence pending at ``pending_ms`` (folded with those due
        by ``now_ms``), or after it while it ``running``. A reschedule hook may change them."""
        left = count
        if self.limit is not None:
            left = min(count, self.limit - self.ran - (1 if running else 0))
        out: list[int] = []
        occurrence = pending_ms
        if not running and left > 0:
            occurrence = self.latest_due(pending_ms, now_ms).due_ms
            out.append(occurrence)
        while len(out) < left:
            due = self.next_after(occurrence, now_ms)
            if due is None:
                break
            occurrence = due.due_ms
            out.append(occurrence)
        return out

    def zone(self) -> ZoneInfo:
        """The time zone its due times are shown in."""
        return ZoneInfo("UTC") if self.calendar is None else zone(self.calendar.interval.tz)

    async def run(self, job: Job) -> Outcome:
        occurrence = job.occurrence_ms
        # Only a first claim of an occurrence folds: a retry, or a run again after a crash
        # (a stall), is another attempt at the occurrence it belongs to, under its id; what
        # came due meanwhile folds after it (next_after).
        if not job.failures and not job.claim.stalls:
            latest = self.latest_due(occurrence, job.now_ms())
            if latest.skipped:
                log.warning(
                    "%s/%s: %d missed occurrences skipped; the latest runs now",
                    job.task_name,
                    job.claim.id,
                    latest.skipped,
                )
                occurrence = latest.due_ms

        async def follow() -> Next | None:
            return await self._following(job, occurrence)

        error = await job.call(occurrence)
        if error is not None:
            return await job.failed(error, occurrence, self, follow)
        return job.done(await follow())

    async def _following(self, job: Job, occurrence_ms: int) -> Next | None:
        state = self
        if self.limit is not None:
            if self.ran + 1 >= self.limit:
                return None  # that was the last occurrence the series runs
            state = replace(self, ran=self.ran + 1)
        due = self.next_after(occurrence_ms, job.now_ms())
        if due is None:
            return None
        if due.skipped:
            log.warning(
                "%s/%s: %d missed occurrences skipped; the latest runs now",
                job.task_name,
                job.claim.id,
                due.skipped,
            )
        payload_json, due_ms = job.payload_json, due.due_ms
        # The record says which occurrence it waits for, so that a run brought forward
        # (App.run_now: the due time moves, the record stays) keeps the series' phase.
        if not job.has_hook:
            return Next(due_ms, payload_json, state, due_ms)
        try:
            # A fresh copy: the handler may have changed the one it was given.
            payload = decode_payload(payload_json)
            answer = await job.ask_hook(payload)
            applied = apply_hook(answer, payload, payload_json, due_ms, job.max_payload_bytes)
        except Exception:
            log.exception(
                "%s/%s: reschedule hook failed; the series goes on unchanged",
                job.task_name,
                job.claim.id,
            )
        else:
            if applied is None:
                return None
            if applied[1] != due_ms and state.calendar is not None:
                # The hook moved the occurrence: the series' wall-clock time follows it, as
                # a fixed period's phase does.
                calendar = CalendarSeries.starting(state.calendar.interval, applied[1])
                state = replace(state, calendar=calendar)
            payload_json, due_ms = applied
        return Next(due_ms, payload_json, state, due_ms)


def _calendar(doc: object) -> CalendarSeries:
    """The calendar step and anchor of field ``"k"``."""
    problem = SchemaError("field 'k' of the record is not a calendar interval with its anchor")
    anchor = doc.get("a") if type(doc) is dict else None
    if type(doc) is not dict or type(anchor) is not str:
        raise problem
    try:
        wall = datetime.fromisoformat(anchor)
        interval = CalendarInterval.from_json(doc)
    except (ValueError, ValidationError):
        raise problem from None
    if wall.tzinfo is not None:
        raise problem
    return CalendarSeries(interval, wall)


def decode_payload(payload_json: str) -> dict[str, Any]:
    """A new dict from a stored payload's JSON text."""
    payload: dict[str, Any] = json.loads(payload_json)
    return payload


def apply_hook(
    answer: object, payload: dict[str, Any], payload_json: str, due_ms: int, max_bytes: int
) -> tuple[str, int] | None:
    """Apply a reschedule hook's answer about ``payload`` (stored as ``payload_json``):
    (payload JSON, due) to go on, or None to end the series.

    Raises:
        ValidationError: the hook returned something else, a bad time or a bad payload.
    """
    if answer is False:
        return None
    if answer is True or answer is None:
        return payload_json, due_ms
    if not isinstance(answer, Reschedule):
        raise ValidationError(
            "reschedule hook", f"returned {type(answer).__name__}: expected bool or Reschedule"
        )
    if answer.payload is not None:
        payload_json = encode_payload(deep_merge(payload, answer.payload), max_bytes)
    if answer.at is not None:
        due_ms = to_ms("Reschedule.at", answer.at)
    return payload_json, due_ms


def deep_merge(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """Return a new dict: ``base`` with ``changes`` merged in, the rule periodic
    reschedules use.

    Nested dicts merge key by key; anything else in ``changes`` (lists included) replaces
    what ``base`` held. Neither argument is modified, and the result shares nothing with
    them.
    """
    out = {key: copy.deepcopy(value) for key, value in base.items()}
    for key, value in changes.items():
        if key in _UNSAFE_KEYS:
            continue
        old = out.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            out[key] = deep_merge(old, value)
        else:
            out[key] = copy.deepcopy(value)
    return out
