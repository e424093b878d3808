"""Periodic tasks: ``every`` a period until ``until``, the reschedule hook, and deep merge.

Stored as the record fields ``"e"`` (the period, ms) and ``"u"`` (the last due time, ms).
"""

from __future__ import annotations

import copy
import json
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, ClassVar

from duetime.clock import MAX_MS, from_ms, in_range
from duetime.errors import SchemaError, ValidationError
from duetime.model import Reschedule
from duetime.stores.base import Outcome
from duetime.triggers.base import Job, Next
from duetime.validate import encode_payload, to_ms

log = logging.getLogger(__name__)

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
    """A series: each occurrence is due ``every_ms`` after the previous one's due time."""

    KEY: ClassVar[str] = "e"
    NAME: ClassVar[str] = "periodic"
    every_ms: int
    until_ms: int | None = None

    @classmethod
    def from_record(cls, doc: dict[str, Any]) -> Periodic:
        every, until = doc.get("e"), doc.get("u")
        if not (type(every) is int and 0 < every <= MAX_MS):
            raise SchemaError("field 'e' of the record is not a period (ms) over 0")
        if until is not None and not (type(until) is int and in_range(until)):
            raise SchemaError("field 'u' of the record is not a time (ms) of the years 1-9999")
        return cls(every, until)

    def fields(self) -> str:
        until = "" if self.until_ms is None else f',"u":{self.until_ms}'
        return f',"e":{self.every_ms}{until}'

    def shown(self) -> dict[str, Any]:
        until = None if self.until_ms is None else from_ms(self.until_ms)
        return {"every": timedelta(milliseconds=self.every_ms), "until": until}

    def next_after(self, occurrence_ms: int, now_ms: int) -> Due | None:
        """The next occurrence after ``occurrence_ms``, or None when the series is over.

        Occurrences keep their phase: each is due ``every`` after the previous one, never
        ``every`` after the run ended. When some are already past (workers were down, or a
        run took longer than the period), they fold into one due now: the latest of them.
        """
        every = self.every_ms
        due = occurrence_ms + every
        skipped = 0
        if due <= now_ms:
            periods = (now_ms - occurrence_ms) // every
            skipped = periods - 1
            due = occurrence_ms + periods * every
        if (self.until_ms is not None and due > self.until_ms) or due > MAX_MS:
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
        every = self.every_ms
        if now_ms - occurrence_ms < every:  # no later occurrence is due: the usual case
            return Due(occurrence_ms, 0)
        periods = (now_ms - occurrence_ms) // every
        if self.until_ms is not None and occurrence_ms + periods * every > self.until_ms:
            # Past the end: the last occurrence within it runs, and the series ends after.
            periods = max(0, (self.until_ms - occurrence_ms) // every)
        return Due(occurrence_ms + periods * every, periods)

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
        if not job.has_hook:
            return Next(due_ms, payload_json, self)
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
            payload_json, due_ms = applied
        return Next(due_ms, payload_json, self)


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
