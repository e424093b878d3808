"""The exception tree of duetime, and the control signals a handler may raise.

Every error duetime raises derives from :class:`DuetimeError`::

    DuetimeError
      ConfigError                 bad settings, an unusable URL, an unsafe server
      ValidationError (ValueError)  input refused at the door; ``field`` names the culprit
        PayloadError                the payload is not a JSON object or is too big
        UnknownTaskType             a task type the app has not registered or declared
        DuplicateTaskNameError      a task type or poller name registered twice
        InvalidTaskConfigurationError  a poller's settings cannot be used
      UnexpectedTaskInstructionsError  a poller's scheduler returned something else than strings
      StoreError                  the store failed
        StoreUnavailable            it cannot be reached (connection refused, dropped, timeout)
        StoreRefused                it refused arguments or data it cannot use (was ScriptError)
        SchemaError                 the store's data or schema is not what duetime expects
      NotFound (LookupError)
        TaskNotFound                no task with that type and id
        ScheduleNotFound            no cron schedule with that name
      LeaseLost                   a write made under a lease that passed to another worker
      ClientClosed                the blocking client was closed before or during the call
      BulkIncomplete              a bulk retry or cancel did the others, but not these tasks
      TaskFailed                  the task whose result was asked for ended dead

Control signals live apart, because they are not failures of duetime: a handler raises
:class:`Retry` to ask for another attempt at a given time, :class:`Abort` to send its task
to the dead letters at once, without further retries, or :class:`RateLimited` to hold its
whole task type back for a while (the task waits, counting no attempt)::

    Retry  Abort  RateLimited
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta


class DuetimeError(Exception):
    """Base class of every error duetime raises."""


class ConfigError(DuetimeError):
    """A setting, a URL or the store server's configuration cannot be used."""


class ValidationError(DuetimeError, ValueError):
    """Input refused before anything was written.

    Attributes:
        field: the name of the argument or field that is wrong.
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


class PayloadError(ValidationError):
    """The payload is not a JSON object, holds values JSON cannot carry, or is too big."""


class UnknownTaskType(ValidationError, LookupError):
    """The task type is neither registered with a handler nor declared on the app."""

    def __init__(
        self, task_type: str, known: list[str] | tuple[str, ...] = (), field: str = "task_type"
    ) -> None:
        hint = f"; known types: {', '.join(sorted(known))}" if known else ""
        super().__init__(
            field,
            f"unknown task type {task_type!r}: register it with @app.task or "
            f"app.declare({task_type!r}) in a process that only schedules{hint}",
        )
        self.task_type = task_type


class DuplicateTaskNameError(ValidationError):
    """A task type, expiring group or poller is registered under a name already taken
    (Planton's error of that name).

    Attributes:
        duplicate_task_name: the name.
    """

    def __init__(self, duplicate_task_name: str, taken_by: str) -> None:
        self.duplicate_task_name = duplicate_task_name
        super().__init__(
            "task_type", f"{duplicate_task_name!r} is already registered to {taken_by}"
        )


class InvalidTaskConfigurationError(ValidationError):
    """A poller's settings cannot be used: a concurrency below 1, a delay or limit that is
    not callable, or a registration once a worker runs (Planton's
    ``InvalidTaskConfigurationNameError``).

    Attributes:
        task_name: the poller.
    """

    def __init__(self, task_name: str, field: str, problem: str) -> None:
        self.task_name = task_name
        super().__init__(field, f"poller {task_name!r}: {problem}")


#: Planton's own name for :class:`InvalidTaskConfigurationError`.
InvalidTaskConfigurationNameError = InvalidTaskConfigurationError


class UnexpectedTaskInstructionsError(DuetimeError):
    """A poller's scheduler returned something that is not a list of strings.

    Attributes:
        task_name: the poller.
        unexpected_task_instructions: what it returned.
    """

    def __init__(self, task_name: str, unexpected_task_instructions: object) -> None:
        self.task_name = task_name
        self.unexpected_task_instructions = unexpected_task_instructions
        shown = repr(unexpected_task_instructions)
        if len(shown) > 200:
            shown = shown[:200] + "..."
        super().__init__(f"poller {task_name!r} returned {shown}: expected a list of strings")


class StoreError(DuetimeError):
    """The store failed to carry out an operation."""


class StoreUnavailable(StoreError):
    """The store cannot be reached: the operation's outcome is unknown."""


class StoreRefused(StoreError):
    """The store refused an operation before writing anything: its arguments, or data it
    found in the store (a key holding a value of another type), cannot be used.

    Attributes:
        key: the key it complained about, when there is one.
        code: the store's own code for the refusal, when it has one.
    """

    def __init__(self, detail: str, *, key: str | None = None, code: int | None = None) -> None:
        self.key = key
        self.code = code
        where = f" (key {key})" if key else ""
        super().__init__(f"the store refused: {detail}{where}")


#: The name :class:`StoreRefused` had when only the Redis store raised it.
ScriptError = StoreRefused


class SchemaError(StoreError):
    """The store holds data or a schema this version of duetime cannot use."""


class NotFound(DuetimeError, LookupError):
    """Something looked up by name or id does not exist."""


class TaskNotFound(NotFound):
    """No task with this type and id exists in the state asked for."""

    def __init__(self, task_type: str, task_id: str, state: str | None = None) -> None:
        self.task_type = task_type
        self.task_id = task_id
        where = f" in state {state!r}" if state else ""
        super().__init__(f"no task {task_type}/{task_id}{where}")


class ScheduleNotFound(NotFound):
    """No cron schedule with this name exists."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"no cron schedule named {name!r}")


class LeaseLost(DuetimeError):
    """A write made under a lease was refused, or not made, because the lease was lost:
    it ran out (the worker was paused or cut off for longer than it) and a later claim took
    it over. Nothing was written.

    Attributes:
        task_type: the task type the write was for.
        token: the fencing token the write carried.
        detail: how the lease was found lost.
    """

    def __init__(self, task_type: str, token: int, detail: str = "a later claim holds it") -> None:
        self.task_type = task_type
        self.token = token
        self.detail = detail
        super().__init__(
            f"the lease of token {token} ({task_type}) was lost: {detail}; nothing was written"
        )


class ClientClosed(DuetimeError):
    """The blocking client (:class:`~duetime.SyncClient`) is closed: the call was not made,
    or it was cut short by the close and its outcome is unknown."""


class BulkIncomplete(DuetimeError):
    """A bulk retry or cancel (:mod:`duetime.admin.bulk`) acted on every task it could, and not on
    those named here (an id a call refuses, such as one written by another program).

    Attributes:
        done: how many tasks it acted on.
        failed: why each task it could not act on was refused, by id.
    """

    #: Ids named in the message at most (all are in ``failed``).
    SHOWN = 3

    def __init__(self, verb: str, task_type: str, done: int, failed: dict[str, str]) -> None:
        self.done = done
        self.failed = failed
        shown = "; ".join(
            f"{task_id.encode('utf-8', 'backslashreplace').decode()!r}: {why}"
            for task_id, why in list(failed.items())[: self.SHOWN]
        )
        more = f"; and {len(failed) - self.SHOWN} more" if len(failed) > self.SHOWN else ""
        super().__init__(
            f"{verb} {done} tasks of {task_type}; {len(failed)} could not be: {shown}{more}"
        )


class TaskFailed(DuetimeError):
    """The last finished run of the task whose result was asked for (``App.result``) ended
    dead: it has no result.

    Attributes:
        task_type: the task's type.
        task_id: its id.
        error: why it ended dead (the run history's error), or None.
        traceback: the traceback of the failure that sent it there, or None.
    """

    def __init__(
        self, task_type: str, task_id: str, error: str | None, traceback: str | None = None
    ) -> None:
        self.task_type = task_type
        self.task_id = task_id
        self.error = error
        self.traceback = traceback
        super().__init__(f"task {task_type}/{task_id} ended dead: {error or 'no error kept'}")


class Retry(Exception):
    """Raised by a handler to run its task again later.

    The attempt counts against the task type's ``retries``; when they are used up the task
    goes to the dead letters like any other failure.

    Args:
        after: how long to wait, or an aware datetime to retry at. ``None`` uses the task
            type's back-off.
        reason: recorded as the task's last error.

    Raises:
        ValidationError: ``after`` is negative, not finite, a naive datetime, or of another
            type (field ``after``): the handler then fails with it, and the type's back-off
            applies.
    """

    def __init__(self, after: timedelta | datetime | None = None, reason: str = "retry") -> None:
        if after is not None:
            _check_after(after)
        self.after = after
        self.reason = reason
        super().__init__(reason)


class Abort(Exception):
    """Raised by a handler to send its task to the dead letters now, with no more retries."""

    def __init__(self, reason: str = "aborted by handler") -> None:
        self.reason = reason
        super().__init__(reason)


class AbortedRun(Abort):
    """Not raised by handlers: what the handler call of a run aborted from outside
    (:meth:`App.abort`, a cron schedule's ``cancel_other``) gives its trigger and the
    listeners' ``failed`` event in place of the handler's own end (an :class:`Abort`:
    never retried)."""


class Stalled(Abort):
    """Not raised by handlers: what a run ends with, its handler not called again, when the
    run's leases expired more than its type's ``max_stalls`` times (its workers died or
    froze each time: a task that kills its worker). It is never retried: a one-off task goes
    to the dead letters, and a series files the occurrence (``<id>@<ms>``) and goes on, as
    after any failure that used up its retries."""

    def __init__(self, stalls: int) -> None:
        super().__init__(f"stalled: its lease expired {stalls} time{'' if stalls == 1 else 's'}")


class RateLimited(Exception):
    """Raised by a handler when what it calls says "too many requests": no worker starts a
    task of its type until ``after`` has passed (by the store's clock), and this task goes
    back to due as it was, counting no attempt.

    Args:
        after: how long the whole type waits: a timedelta, a number of seconds, or an aware
            datetime to wait until.
        reason: said in the worker's log.

    Raises:
        ValidationError: ``after`` is negative, not finite, a naive datetime, or of another
            type (field ``after``).
    """

    def __init__(
        self, after: timedelta | float | datetime = timedelta(0), reason: str = "rate limited"
    ) -> None:
        _check_after(after)
        self.after = after
        self.reason = reason
        super().__init__(reason)


def _check_after(after: object) -> None:
    if isinstance(after, datetime):
        if after.tzinfo is None or after.utcoffset() is None:
            raise ValidationError("after", "must be timezone-aware (a naive datetime is ambiguous)")
        return
    if isinstance(after, timedelta):
        seconds = after.total_seconds()
    elif isinstance(after, int | float) and not isinstance(after, bool):
        seconds = float(after)
    else:
        kind = type(after).__name__
        raise ValidationError("after", f"must be a timedelta, seconds or a datetime, not {kind}")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValidationError("after", "must be zero or more, and finite")
