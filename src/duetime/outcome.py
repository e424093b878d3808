"""What follows a run: done, the next occurrence, a retry or the dead letters. Pure logic."""

from __future__ import annotations

from dataclasses import dataclass

from duetime.codec import Record, dump_json, encode_payload, encode_record, to_ms
from duetime.errors import ValidationError
from duetime.merge import deep_merge
from duetime.model import Reschedule, TaskPolicy
from duetime.stores.base import Claim, Outcome


@dataclass(frozen=True, slots=True)
class Next:
    """The next occurrence of a periodic task: when, and how many were skipped to get there."""

    due_ms: int
    skipped: int


def occurrence_id(task_id: str, occurrence_ms: int) -> str:
    """The stable id of an occurrence, ``"<task id>@<due ms>"``. A dead letter filed for an
    occurrence already has such an id, and keeps it when it is retried."""
    suffix = f"@{occurrence_ms}"
    return task_id if task_id.endswith(suffix) else task_id + suffix


def occurrence_ms(claim: Claim, record: Record) -> int:
    """The due time of the occurrence a claim belongs to (retries keep the first one)."""
    return claim.due_ms if record.occurrence_ms is None else record.occurrence_ms


def next_occurrence(record: Record, occ_ms: int, now_ms: int) -> Next | None:
    """The next occurrence after ``occ_ms``, or None when the series is over.

    Occurrences keep their phase: each is due ``every`` after the previous one, never
    ``every`` after the run ended. When some are already past (workers were down, or a run
    took longer than the period), they are folded into one due now: the latest of them.
    """
    every = record.every_ms
    if every is None:
        return None
    due = occ_ms + every
    skipped = 0
    if due <= now_ms:
        periods = (now_ms - occ_ms) // every
        skipped = periods - 1
        due = occ_ms + periods * every
    if record.until_ms is not None and due > record.until_ms:
        return None
    return Next(due, skipped)


def apply_hook(
    result: object, payload: dict[str, object], due_ms: int, max_payload_bytes: int
) -> tuple[str, int] | None:
    """Apply a reschedule hook's answer: (payload JSON, due) to go on, or None to stop.

    Raises:
        ValidationError: the hook returned something else, a bad time or a bad payload.
    """
    if result is False:
        return None
    if result is True or result is None:
        return dump_json(payload), due_ms
    if not isinstance(result, Reschedule):
        raise ValidationError(
            "reschedule hook", f"returned {type(result).__name__}: expected bool or Reschedule"
        )
    merged = payload if result.payload is None else deep_merge(payload, result.payload)
    if result.at is not None:
        due_ms = to_ms("Reschedule.at", result.at)
    return encode_payload(merged, max_payload_bytes), due_ms


def attempt(claim: Claim, record: Record) -> int:
    """Which attempt at its occurrence a claim is: 1 for the first."""
    return record.failures + claim.stalls + 1


#: The next occurrence of a series: its due time and its record.
Following = tuple[int, str]


def periodic_following(record: Record, payload_json: str, due_ms: int) -> Following:
    """The next occurrence of an ``every`` series, with the payload it will carry."""
    return due_ms, encode_record(payload_json, record.every_ms, record.until_ms)


def success(claim: Claim, following: Following | None) -> Outcome:
    """The outcome of a run that succeeded; ``following`` is the next occurrence, if any."""
    if following is None:
        return Outcome("done", claim)
    due, next_record = following
    return Outcome("next", claim, due, next_record)


def failure(
    claim: Claim,
    record: Record,
    policy: TaskPolicy,
    now_ms: int,
    error: str,
    *,
    retry_at_ms: int | None = None,
    give_up: bool = False,
    following: Following | None = None,
) -> Outcome:
    """The outcome of a run that failed.

    A retry keeps the occurrence (and a cron schedule's definition). Once retries are used
    up (or ``give_up``), a one-off task goes to the dead letters; a series (``every`` or
    cron) files the failed occurrence there under ``"<id>@<occurrence due ms>"`` and goes
    on with ``following``.
    """
    failures = record.failures + 1
    occ = occurrence_ms(claim, record)
    payload_json = dump_json(record.payload)
    if not give_up and failures <= policy.retries:
        due = retry_at_ms if retry_at_ms is not None else now_ms + policy.backoff.delay_ms(failures)
        retry_record = encode_record(
            payload_json, record.every_ms, record.until_ms, occ, failures, record.cron
        )
        return Outcome("retry", claim, due, retry_record, error)
    if record.every_ms is None and record.cron is None:
        dead_record = encode_record(payload_json, None, None, occ, failures)
        return Outcome("dead", claim, None, dead_record, error)
    dead_id = occurrence_id(claim.id, occ)
    dead_record = encode_record(payload_json, occurrence_ms=occ, failures=failures)
    return success(claim, following)._replace(error=error, dead_id=dead_id, dead_record=dead_record)
