"""The values users handle: tasks to schedule, policies, what a listing shows."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Unpack

from duetime._backoff import backoff_delay
from duetime.errors import ValidationError
from duetime.validate import as_timedelta, check_int, duration_ms

if TYPE_CHECKING:  # imported where a rate or a calendar interval is given
    from collections.abc import Sequence

    from duetime.interval import CalendarInterval
    from duetime.middleware import MiddlewareLike
    from duetime.rate import Rate

Delivery = Literal["at_least_once", "at_most_once"]
#: What scheduling an id does when a task with that id is pending (waits or runs): see
#: :meth:`App.schedule`.
IfExists = Literal["replace", "keep", "merge"]

#: Defaults of a task type. The lease is how long a claimed task stays with its worker
#: without a renewal (renewals come every third of it), so it bounds how soon a crashed
#: worker's tasks run again.
DEFAULT_CONCURRENCY = 16
DEFAULT_TIMEOUT = timedelta(minutes=5)
DEFAULT_RETRIES = 3
DEFAULT_LEASE = timedelta(seconds=30)
DEFAULT_MAX_STALLS = 3
#: An idle worker looks again at least this often, even with nothing due: a backstop for a
#: wake-up lost while its connection was down.
DEFAULT_MAX_IDLE = timedelta(seconds=5)
#: Most tasks one claim takes; more round trips below, longer scripts above.
DEFAULT_BATCH = 500
#: Claiming this early leaves room for the claim's round trip, the timer that starts the
#: task, and a stall of the event loop on a busy machine (docs/performance.md, W3).
DEFAULT_LOOKAHEAD = timedelta(milliseconds=10)


@dataclass(frozen=True, slots=True, kw_only=True)
class Backoff:
    """Exponential back-off with jitter between attempts of a failing task.

    The n-th retry waits ``min(cap, base * factor ** (n - 1))``, of which the ``jitter``
    fraction is random, so that tasks failing together do not come back together.
    """

    base: timedelta = timedelta(seconds=1)
    cap: timedelta = timedelta(hours=1)
    factor: float = 2.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        duration_ms("backoff.base", self.base, allow_zero=True)
        duration_ms("backoff.cap", self.cap, allow_zero=True)
        if not self.factor >= 1:
            raise ValidationError("backoff.factor", "must be 1 or more")
        if not 0 <= self.jitter <= 1:
            raise ValidationError("backoff.jitter", "must be between 0 and 1")

    @classmethod
    def fixed(cls, wait: timedelta | float) -> Backoff:
        """The same wait (seconds, or a timedelta) before every retry, without jitter; 0 retries
        at once."""
        wait = timedelta(milliseconds=duration_ms("backoff", wait, allow_zero=True))
        return cls(base=wait, cap=wait, factor=1.0, jitter=0.0)

    def delay_ms(self, retry: int) -> int:
        """How long to wait before retry number ``retry`` (1 for the first)."""
        base = duration_ms("base", self.base, allow_zero=True)
        cap = duration_ms("cap", self.cap, allow_zero=True)
        return int(backoff_delay(retry, base, cap, factor=self.factor, jitter=self.jitter))


class PolicyOptions(TypedDict, total=False):
    """The options of a task type's policy, as ``@app.task`` and its kin take them (see
    :class:`TaskPolicy`; numbers are seconds)."""

    concurrency: int
    timeout: timedelta | float | None
    retries: int | None
    backoff: Backoff | timedelta | float | None
    lease: timedelta | float
    max_stalls: int
    delivery: Delivery
    rate: Rate | str | None
    global_concurrency: int | None
    group_rate: Rate | str | None
    group_concurrency: int | None


class TaskOptions(PolicyOptions, total=False):
    """Every option of a task type: its policy's, how often a worker claims its tasks
    (``pacing``: :class:`Pacing`), how many partitions its tasks are spread over
    (``partitions``, 1 to 256; every process must give the same number), and how much of
    its run history it keeps (``history``: a :class:`History`, True for the defaults, False
    for none; by default the app's), the priority of its tasks scheduled without one
    (``priority``, -100 to 100, default 0), and its own middleware around its handler
    (``middleware``: :class:`~duetime.Middleware`, outermost first, inside the App's)."""

    pacing: Pacing | None
    partitions: int
    history: History | bool | None
    priority: int
    middleware: Sequence[MiddlewareLike]


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskPolicy:
    """How a task type's tasks are run.

    Attributes:
        concurrency: most handlers of this type running at once in one worker.
        timeout: a handler running longer is cancelled and counts as failed; None for no
            limit. A plain ``def`` handler cannot be stopped: its thread runs on, but the
            worker treats the attempt as failed.
        retries: attempts after the first before the task goes to the dead letters.
        backoff: the wait between attempts.
        lease: how long a claim holds without renewal; renewed every third of it.
        max_stalls: how many expired leases (a worker died or hung) a task survives before
            it goes to the dead letters.
        delivery: ``at_least_once`` (a task whose worker died runs again) or
            ``at_most_once`` (it goes to the dead letters instead).
        rate: at most this many starts of the type per period, across every worker
            (:class:`~duetime.Rate`; ``"100/s"``, ``"N/m"`` or ``"N/h"`` as options give
            it); None for no limit. Tasks it holds back stay due, counting no attempt.
        global_concurrency: most handlers of the type running at once across every worker
            (``concurrency`` still caps each worker); None for no limit.
        group_rate: at most this many starts per period of each group's tasks (tasks
            scheduled with ``group=``), across every worker; None for no limit.
        group_concurrency: most handlers of one group running at once across every worker;
            None for no limit. A group at its limit does not hold back the others.
    """

    concurrency: int = DEFAULT_CONCURRENCY
    timeout: timedelta | None = DEFAULT_TIMEOUT
    retries: int = DEFAULT_RETRIES
    backoff: Backoff = field(default_factory=Backoff)
    lease: timedelta = DEFAULT_LEASE
    max_stalls: int = DEFAULT_MAX_STALLS
    delivery: Delivery = "at_least_once"
    rate: Rate | None = None
    global_concurrency: int | None = None
    group_rate: Rate | None = None
    group_concurrency: int | None = None

    def __post_init__(self) -> None:
        check_int("concurrency", self.concurrency)
        for name in ("rate", "group_rate"):
            if (value := getattr(self, name)) is not None:
                from duetime.rate import Rate

                if not isinstance(value, Rate):
                    raise ValidationError(name, "must be a duetime.Rate (or, as an option, 'N/s')")
        for name in ("global_concurrency", "group_concurrency"):  # None, or 1 or more
            if (value := getattr(self, name)) is not None:
                check_int(name, value)
        if not isinstance(self.backoff, Backoff):
            raise ValidationError("backoff", "must be a duetime.Backoff, or a number of seconds")
        if self.timeout is not None:
            duration_ms("timeout", self.timeout)
        check_int("retries", self.retries, minimum=0)
        check_int("max_stalls", self.max_stalls, minimum=0)
        if duration_ms("lease", self.lease) < 100:
            raise ValidationError("lease", "must be at least 100 ms")
        if self.delivery not in ("at_least_once", "at_most_once"):
            raise ValidationError("delivery", "must be 'at_least_once' or 'at_most_once'")
        if self.delivery == "at_most_once" and self.retries:
            raise ValidationError(
                "retries", "must be 0 with at_most_once delivery: a retry is a second run"
            )

    @classmethod
    def from_options(cls, **options: Unpack[PolicyOptions]) -> TaskPolicy:
        """The policy of a task type's options (:class:`PolicyOptions`): numbers are
        seconds, a number or timedelta as ``backoff`` is the same wait before every retry,
        ``rate`` may be a string (``"100/s"``, ``"N/m"``, ``"N/h"``), and ``retries``
        defaults to 3, or 0 with at-most-once delivery.

        Raises:
            ValidationError: an option that is not one, or a bad value (naming it).
        """
        given: dict[str, Any] = dict(options)
        unknown = sorted(set(given) - _POLICY_FIELDS)
        if unknown:
            raise ValidationError(unknown[0], "is not an option of a task type")
        if given.get("retries") is None:
            given["retries"] = 0 if given.get("delivery") == "at_most_once" else DEFAULT_RETRIES
        if "timeout" in given:
            given["timeout"] = as_timedelta("timeout", given["timeout"])
        given["backoff"] = _backoff(given.get("backoff"))
        for name in ("rate", "group_rate"):
            if name in given:
                from duetime.rate import as_rate

                given[name] = as_rate(given[name], name)
        if "lease" in given:
            given["lease"] = as_timedelta("lease", given["lease"]) or DEFAULT_LEASE
        return cls(**given)


_POLICY_FIELDS = frozenset(f.name for f in fields(TaskPolicy))


def _backoff(given: Backoff | timedelta | float | None) -> Backoff:
    if given is None:
        return Backoff()
    if isinstance(given, Backoff):
        return given
    if isinstance(given, timedelta | int | float) and not isinstance(given, bool):
        return Backoff.fixed(given)
    raise ValidationError("backoff", "must be a duetime.Backoff, or a number of seconds")


#: The runs a type's history keeps unless told: enough to page back through a busy hour,
#: small enough that a type's history stays a few hundred KB (docs/performance.md, W4).
DEFAULT_HISTORY_KEEP = 1000
DEFAULT_HISTORY_MAX_AGE = timedelta(days=7)
#: The most a type's history may keep: a task's runs are found by walking its type's.
MAX_HISTORY_KEEP = 1_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class History:
    """How much of its run history a task type keeps (``App(history=...)``, and per type
    ``@app.task(..., history=...)``): every run that ends, with its outcome, newest first.

    Attributes:
        keep: the most runs kept, the newest (1 to 1,000,000; default 1,000).
        max_age: runs that finished longer ago than this are dropped (a timedelta or a
            number of seconds; default 7 days).
    """

    keep: int = DEFAULT_HISTORY_KEEP
    max_age: timedelta | float = DEFAULT_HISTORY_MAX_AGE

    def __post_init__(self) -> None:
        if check_int("history.keep", self.keep) > MAX_HISTORY_KEEP:
            raise ValidationError("history.keep", f"must be at most {MAX_HISTORY_KEEP:,}")
        duration_ms("history.max_age", self.max_age)

    @property
    def max_age_ms(self) -> int:
        """``max_age`` in whole milliseconds."""
        return duration_ms("history.max_age", self.max_age)


@dataclass(frozen=True, slots=True, kw_only=True)
class Pacing:
    """How often a worker claims tasks of a type. Neither knob sets the latency.

    Attributes:
        pause: a wait between two claim rounds while tasks are due (``timeout`` in the
            Redis sorted-set scheduler duetime keeps compatible in spirit); zero claims again
            at once.
        max_idle: the longest an idle worker sleeps before looking again (that scheduler's
            ``timeoutWhenEmpty``). Workers are woken when an earlier task arrives, so this is
            only a backstop.
        batch: most tasks claimed in one round trip.
        lookahead: tasks due this soon are claimed early and started at their due time by
            a local timer, so the round trip of the claim does not make them late.
    """

    pause: timedelta = timedelta(0)
    max_idle: timedelta = DEFAULT_MAX_IDLE
    batch: int = DEFAULT_BATCH
    lookahead: timedelta = DEFAULT_LOOKAHEAD

    def __post_init__(self) -> None:
        duration_ms("pause", self.pause, allow_zero=True)
        duration_ms("max_idle", self.max_idle)
        check_int("batch", self.batch)
        if duration_ms("lookahead", self.lookahead, allow_zero=True) > 1000:
            raise ValidationError("lookahead", "must be at most one second")


@dataclass(frozen=True, slots=True)
class Task:
    """A task to schedule with :meth:`App.schedule_many`; the fields are those of
    :meth:`App.schedule`."""

    task_type: str
    task_id: str
    at: datetime | None = None
    delay: timedelta | None = None
    payload: dict[str, Any] | None = None
    every: timedelta | CalendarInterval | None = None
    until: datetime | None = None
    limit: int | None = None
    if_exists: IfExists = "replace"
    unique_for: timedelta | None = None
    priority: int | None = None
    group: str | None = None
    meta: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Reschedule:
    """What a reschedule hook returns to let a periodic task go on, with changes.

    Attributes:
        payload: changes deep-merged into the stored payload (nested dicts merge, lists
            and other values are replaced). None keeps the payload as it is.
        at: when the next occurrence is due, instead of the previous due time plus
            ``every``.
    """

    payload: dict[str, Any] | None = None
    at: datetime | None = None


@dataclass(frozen=True, slots=True)
class TaskInfo:
    """A task as a listing or :meth:`App.get` shows it.

    Attributes:
        state: ``due``, ``running`` or ``dead``.
        due: when it is due (running: when the run was due; dead: when it died); None when
            the store holds a time that cannot be read (see ``error``).
        payload: None when the stored record could not be read (see ``error``).
        attempts: claims of the current occurrence so far.
        error: the last error, or why it is dead.
        lease_expires: for running tasks, when their lease runs out unless renewed.
        kind: what kind of task it is: ``once`` (a one-off task), ``periodic`` (an
            ``every`` series), ``cron`` (a cron schedule), ``expiring`` (an expiring
            entry) or ``poller`` (a poller's calls).
        traceback: the traceback of the last failed attempt (of a dead task, the one that
            sent it there; of a retry, due or running, the attempt before), its last frames
            and at most 8 KB; None when nothing failed, or the failure had none to keep (a
            :class:`~duetime.Retry` or :class:`~duetime.Abort`, a time limit in a thread,
            a record that could not be read).
        priority: its priority (-100 to 100; higher is claimed first among due tasks).
        group: its group (None for none): the type's group limits hold each group apart.
        unique_for: the window it was scheduled with (``unique_for``), or None: for that
            long after it finishes, scheduling its id again writes nothing.
        result: for a task that stays as it runs (a series, a cron schedule), what the
            handler of its last finished run returned (:meth:`App.result`), when that run
            ended done and its type keeps a history; None otherwise (a one-off task is
            gone once it finished: ask :meth:`App.result`).
        meta: its metadata (``meta=`` as scheduled; {} for none, or when the record could
            not be read).
    """

    task_type: str
    task_id: str
    state: str
    due: datetime | None
    payload: dict[str, Any] | None
    every: timedelta | CalendarInterval | None
    until: datetime | None
    attempts: int
    error: str | None
    lease_expires: datetime | None = None
    kind: str = "once"
    traceback: str | None = None
    priority: int = 0
    group: str | None = None
    unique_for: timedelta | None = None
    result: Any = None
    meta: dict[str, Any] = field(default_factory=dict)
