"""What follows a run, as the store's Outcome: done, the next occurrence, a retry or the
dead letters. Pure logic: no clock, no store."""

from __future__ import annotations

from datetime import datetime

from duetime.errors import Abort, Retry
from duetime.model import TaskPolicy
from duetime.record import Record
from duetime.stores.base import Claim, NewTask, Outcome
from duetime.triggers.base import Next, Trigger
from duetime.validate import duration_ms, to_ms


def occurrence_id(task_id: str, occurrence_ms: int) -> str:
    """The stable id of an occurrence, ``"<task id>@<due ms>"``. A task that already has
    such an id (a dead letter filed for an occurrence, an expiry or cron tick handed off, a
    key event) keeps it, retried or run again: it is never suffixed twice. No id a user
    picks ends so (:func:`duetime.validate.is_occurrence_id`), and a user's id has at most
    200 bytes, so this id has at most :data:`~duetime.validate.MAX_STORED_ID_BYTES`."""
    suffix = f"@{occurrence_ms}"
    return task_id if task_id.endswith(suffix) else task_id + suffix


def attempt(claim: Claim, record: Record) -> int:
    """Which attempt at its occurrence a claim is: 1 for the first."""
    return record.failures + claim.stalls + 1


def describe(exc: BaseException) -> str:
    """A failure as a task's error shows it: the reason given, or the exception's type and
    message, as text any store can hold."""
    if isinstance(exc, Abort | Retry):
        return safe_text(str(exc.reason))
    try:
        text = str(exc)
    except Exception:  # an exception whose __str__ fails says nothing more
        text = ""
    return safe_text(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


def safe_text(text: str) -> str:
    """``text`` with what UTF-8 cannot carry (lone surrogates) written as escapes."""
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode()


def hand_off(claim: Claim, record: Record, occurrence_ms: int, now_ms: int) -> NewTask:
    """The occurrence due at ``occurrence_ms`` as a task of its own, due now."""
    own = Record(record.payload_json, None, occurrence_ms).encode()
    return NewTask(occurrence_id(claim.id, occurrence_ms), now_ms, own)


def success(claim: Claim, following: Next | None, spawn: NewTask | None = None) -> Outcome:
    """The outcome of an occurrence that is over: the task ends, or waits for ``following``."""
    if following is None:
        return Outcome("done", claim, spawn=spawn)
    record = Record.following(following).encode()
    return Outcome("next", claim, following.due_ms, record, spawn=spawn)


def retry_due(exc: Exception, policy: TaskPolicy, failures: int, now_ms: int) -> int:
    """When the failed attempt number ``failures`` runs again: when its ``Retry`` says, else
    after the type's back-off.

    Raises:
        ValidationError: the ``Retry`` carries a bad time.
    """
    if isinstance(exc, Retry) and isinstance(exc.after, datetime):
        return to_ms("Retry.after", exc.after)
    if isinstance(exc, Retry) and exc.after is not None:
        return now_ms + duration_ms("Retry.after", exc.after, allow_zero=True)
    return now_ms + policy.backoff.delay_ms(failures)


def retries_left(exc: Exception, policy: TaskPolicy, failures: int) -> bool:
    """Whether the attempt that failed with ``exc`` (failure number ``failures`` of its
    occurrence) is tried again."""
    return not isinstance(exc, Abort) and failures <= policy.retries


def retry(
    claim: Claim,
    record: Record,
    occurrence_ms: int,
    state: Trigger | None,
    failures: int,
    due_ms: int,
    error: str,
) -> Outcome:
    """Another attempt at the same occurrence at ``due_ms``, keeping the payload as stored
    and the trigger's ``state``."""
    again = Record(record.payload_json, state, occurrence_ms, failures).encode()
    return Outcome("retry", claim, due_ms, again, error)


def given_up(
    claim: Claim,
    record: Record,
    occurrence_ms: int,
    failures: int,
    error: str,
    *,
    series: bool,
    following: Next | None = None,
) -> Outcome:
    """An occurrence out of retries. A one-off task goes to the dead letters; a series files
    the occurrence there under ``"<id>@<occurrence ms>"`` and goes on with ``following``."""
    filed = Record(record.payload_json, None, occurrence_ms, failures).encode()
    if not series:
        return Outcome("dead", claim, None, filed, error)
    dead_id = occurrence_id(claim.id, occurrence_ms)
    return success(claim, following)._replace(error=error, dead_id=dead_id, dead_record=filed)
