"""What follows a run, as the store's Outcome: done, the next occurrence, a retry or the
dead letters, a hold. Pure logic: no clock, no store (a hold is logged as it is made)."""

from __future__ import annotations

import logging
import traceback
from datetime import datetime
from types import TracebackType

from duetime.clock import MAX_MS, iso
from duetime.errors import Abort, RateLimited, Retry, ValidationError
from duetime.model import TaskPolicy
from duetime.record import Record
from duetime.stores.base import Claim, NewTask, Outcome
from duetime.triggers.base import Next, Trigger
from duetime.validate import duration_ms, to_ms
from duetime.validate import occurrence_id as occurrence_id  # its home; named here too

log = logging.getLogger(__name__)


def attempt(claim: Claim, record: Record) -> int:
    """Which attempt at its occurrence a claim is: 1 for the first."""
    return record.failures + claim.stalls + 1


def describe(exc: BaseException) -> str:
    """A failure as a task's error shows it: the reason given, or the exception's type and
    message, as text any store can hold."""
    if isinstance(exc, Abort | Retry | RateLimited):
        return safe_text(str(exc.reason))
    try:
        text = str(exc)
    except Exception:  # an exception whose __str__ fails says nothing more
        text = ""
    return safe_text(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


#: What a stored traceback keeps: the innermost frames of each exception in its chain (the
#: handler's, where it failed), and at most this many bytes of UTF-8 in all.
TRACE_FRAMES = 8
TRACE_BYTES = 8192
#: Of a traceback cut to TRACE_BYTES, the share kept from its start (the rest from its end,
#: where the exception raised last and its message are).
_TRACE_HEAD_BYTES = 2048
#: Frames of the machinery between the worker and a handler, left out of the start of a
#: traceback: duetime's executor, and asyncio's and the thread pool's calls.
_MACHINERY = ("duetime.worker.", "asyncio.", "concurrent.futures.")


def trace(exc: BaseException, *, internal: bool = False) -> str | None:
    """The traceback of a handler's exception as a task keeps it, or None for the signals a
    handler gives on purpose (:class:`~duetime.Retry`, :class:`~duetime.Abort`).

    It starts at the handler's own frame (the worker's frames above it are left out, unless
    ``internal``: the failure was in duetime's own code), keeps the last
    :data:`TRACE_FRAMES` frames of each exception in the chain, and at most
    :data:`TRACE_BYTES` bytes of UTF-8: a longer one keeps its start and its end, with a
    line saying how much was cut between them.
    """
    if isinstance(exc, Abort | Retry | RateLimited):
        return None
    tb = exc.__traceback__ if internal else _handler_frames(exc.__traceback__)
    if tb is None and exc.__cause__ is None and exc.__context__ is None:
        return None  # raised before the handler ran, or by duetime about it: the error says all
    try:
        shown = traceback.TracebackException(type(exc), exc, tb, limit=-TRACE_FRAMES)
        text = "".join(shown.format())
    except Exception:  # an exception that cannot be shown (a RecursionError, say): its type
        text = f"{type(exc).__name__} (its traceback could not be formatted)\n"
    return bounded(safe_text(text), TRACE_BYTES)


def _handler_frames(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` from the first frame that is not the machinery's (None if every one is)."""
    while tb is not None:
        if not tb.tb_frame.f_globals.get("__name__", "").startswith(_MACHINERY):
            return tb
        tb = tb.tb_next
    return None


def bounded(text: str, limit: int) -> str:
    """``text`` (UTF-8 text) in at most ``limit`` bytes of UTF-8: when longer, its start and
    its end with a line saying how many bytes were cut; never a character cut in two."""
    data = text.encode()
    if len(data) <= limit:
        return text
    head_bytes = min(_TRACE_HEAD_BYTES, limit // 4)
    # The line that says what was cut, at its longest (fewer bytes are cut than there are).
    mark_bytes = len(_cut_mark(len(data)))
    tail_bytes = max(0, limit - head_bytes - mark_bytes)
    head = data[:head_bytes].decode(errors="ignore")
    tail = data[len(data) - tail_bytes :].decode(errors="ignore")
    cut = len(data) - len(head.encode()) - len(tail.encode())
    return head + _cut_mark(cut) + tail


def _cut_mark(cut: int) -> str:
    return f"\n[... {cut} bytes cut ...]\n"


def safe_text(text: str) -> str:
    """``text`` with what UTF-8 cannot carry (lone surrogates) written as escapes."""
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode()


def hand_off(claim: Claim, record: Record, occurrence_ms: int, now_ms: int) -> NewTask:
    """The occurrence due at ``occurrence_ms`` as a task of its own, due now."""
    own = Record(record.payload_json, None, occurrence_ms, meta_json=record.meta_json).encode()
    return NewTask(occurrence_id(claim.id, occurrence_ms), now_ms, own)


def success(
    claim: Claim,
    following: Next | None,
    spawn: NewTask | None = None,
    unique_ms: int = 0,
    meta_json: str | None = None,
) -> Outcome:
    """The outcome of an occurrence that is over: the task ends, or waits for ``following``.
    ``unique_ms`` (the record's mark of ``unique_for``) goes with the end, or on to the
    next occurrence's record, as does the task's metadata (``meta_json``)."""
    if following is None:
        return Outcome("done", claim, spawn=spawn, unique_ms=unique_ms)
    nxt = following
    record = Record(
        nxt.payload_json, nxt.trigger, nxt.occurrence_ms, 0, None, unique_ms, meta_json=meta_json
    )
    return Outcome("next", claim, following.due_ms, record.encode(), spawn=spawn)


def aborted(
    claim: Claim,
    following: Next | None,
    why: str,
    unique_ms: int = 0,
    meta_json: str | None = None,
) -> Outcome:
    """The outcome of an aborted run: not retried, no dead letter; the task ends (with its
    mark of ``unique_for``: it counts as finished), or a series waits for ``following``
    (with its metadata); marked ``aborted`` with ``why`` as its error."""
    done = success(claim, following, None, unique_ms, meta_json)
    return done._replace(error=why, aborted=True)


def retry_due(exc: Exception, policy: TaskPolicy, failures: int, now_ms: int) -> int:
    """When the failed attempt number ``failures`` runs again: when its ``Retry`` says, else
    after the type's back-off.

    Raises:
        ValidationError: the ``Retry`` carries a bad time.
    """
    if isinstance(exc, Retry) and isinstance(exc.after, datetime):
        return _before_the_end("Retry.after", to_ms("Retry.after", exc.after))
    if isinstance(exc, Retry) and exc.after is not None:
        wait = duration_ms("Retry.after", exc.after, allow_zero=True)
        return _before_the_end("Retry.after", now_ms + wait)
    return now_ms + policy.backoff.delay_ms(failures)


def _before_the_end(field: str, due_ms: int) -> int:
    """``due_ms`` unless it is past the year 9999, which no store keeps."""
    if due_ms > MAX_MS:
        raise ValidationError(field, "is past the year 9999")
    return due_ms


def held(task_type: str, claim: Claim, signal: RateLimited, now_ms: int) -> Outcome:
    """What follows a handler's :class:`~duetime.RateLimited`: the task back to due as it
    was (no attempt counted), and its whole type held until ``after`` has passed (logged)."""
    if isinstance(signal.after, datetime):
        until = to_ms("RateLimited.after", signal.after)
    else:
        until = now_ms + duration_ms("RateLimited.after", signal.after, allow_zero=True)
    until = min(until, MAX_MS)  # held past the year 9999 is held for good
    log.info(
        "%s/%s: %s; no task of the type starts before %s (the task waits, no attempt counted)",
        task_type,
        claim.id,
        describe(signal),
        iso(until),
    )
    return Outcome("hold", claim, until)


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
    trace: str | None = None,
) -> Outcome:
    """Another attempt at the same occurrence at ``due_ms``, keeping the payload as stored
    (and its mark of ``unique_for``) and the trigger's ``state``, and the failed attempt's
    ``trace``."""
    again = Record(
        record.payload_json,
        state,
        occurrence_ms,
        failures,
        trace,
        record.unique_ms,
        meta_json=record.meta_json,
    ).encode()
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
    trace: str | None = None,
) -> Outcome:
    """An occurrence out of retries. A one-off task goes to the dead letters; a series files
    the occurrence there under ``"<id>@<occurrence ms>"`` and goes on with ``following``.
    The dead letter keeps the last attempt's ``trace``, and a one-off task's its mark of
    ``unique_for`` (it counts as finished)."""
    meta = record.meta_json
    if not series:
        unique = record.unique_ms
        filed = Record(
            record.payload_json, None, occurrence_ms, failures, trace, unique, meta_json=meta
        ).encode()
        return Outcome("dead", claim, None, filed, error, unique_ms=unique)
    filed = Record(
        record.payload_json, None, occurrence_ms, failures, trace, meta_json=meta
    ).encode()
    dead_id = occurrence_id(claim.id, occurrence_ms)
    return success(claim, following, None, record.unique_ms, meta)._replace(
        error=error, dead_id=dead_id, dead_record=filed
    )
