"""The trigger seam: what a kind of trigger is, and what a worker offers it to run a task.

A task's record may carry a trigger: the state that makes the task come due again (an
``every`` series, a cron schedule). A trigger kind is one module under ``duetime.triggers``
that says, in one place, how that state is stored (:meth:`Trigger.fields` and
``from_record``), what runs when the task is claimed, and what follows the run
(:meth:`Trigger.run`). A task without a trigger runs once (:mod:`duetime.triggers.once`).

The worker's executor implements :class:`Job`; a trigger kind never sees a store, a key or
the App, and adding a kind adds no branch to the executor: only a line in
:mod:`duetime.triggers.kinds`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol, runtime_checkable

from duetime.events import EventKind
from duetime.stores.base import Claim, Outcome

if TYPE_CHECKING:  # zoneinfo loads with the first trigger that reads a zone
    from zoneinfo import ZoneInfo


class Next(NamedTuple):
    """What a trigger says comes next: the task due again at ``due_ms`` with this record.

    Attributes:
        payload_json: the payload's JSON text (the one it ran with, or a hook's change).
        trigger: the trigger's state from then on.
        occurrence_ms: the occurrence the next claim belongs to, when it is not the due
            time itself (a cron schedule waits for a tick, and its due time has jitter).
    """

    due_ms: int
    payload_json: str
    trigger: Trigger
    occurrence_ms: int | None = None


#: What follows an occurrence that is over, computed only then (a periodic task's
#: reschedule hook must not be asked while the occurrence may still be retried).
Follow = Callable[[], Awaitable[Next | None]]


class Trigger(Protocol):
    """The trigger state a task's record carries. Each kind also defines, as class members,
    ``KEY`` (the record field that marks it), ``NAME`` (what a listing calls the kind) and
    ``from_record(doc)`` (its state from the record's fields, raising
    :class:`~duetime.errors.SchemaError` when they are unusable)."""

    KEY: ClassVar[str]
    NAME: ClassVar[str]

    def shown(self) -> dict[str, Any]:
        """What a listing shows of its state: fields of :class:`~duetime.TaskInfo`
        (``every`` and ``until`` of a series), none by default."""
        ...

    def fields(self) -> str:
        """Its state as record fields, each written as ``,"<name>":<JSON>``."""
        ...

    async def run(self, job: Job) -> Outcome:
        """Run a claimed task of this kind (calling ``job.call`` or not) and return what
        follows: ``job.done(...)`` or ``await job.failed(...)``."""
        ...


@runtime_checkable
class Recurring(Protocol):
    """A trigger whose task comes due again and again (a series, a cron schedule): what
    :meth:`App.next_occurrences <duetime.App.next_occurrences>` reads of it."""

    def upcoming(self, pending_ms: int, now_ms: int, count: int, *, running: bool) -> list[int]:
        """The next ``count`` due times (fewer when it ends first) as the worker will run
        them: from the occurrence pending at ``pending_ms`` (the record's), or after it while
        that one is ``running``; ``now_ms`` decides which are past."""
        ...

    def zone(self) -> ZoneInfo:
        """The time zone its due times are shown in."""
        ...


class TriggerKind(Protocol):
    """The class side of a trigger kind: how its state is found in a record."""

    KEY: ClassVar[str]

    def from_record(self, doc: dict[str, Any]) -> Trigger:
        """The trigger state in a decoded record's fields (``doc``, without the payload).

        Raises:
            SchemaError: naming the field that cannot be used.
        """
        ...


class Job(Protocol):
    """One claimed task in a worker: what a trigger kind runs it with.

    Attributes:
        claim: the lease, with the task's id and the due time it was claimed at.
        task_name: the task type.
        payload_json: the payload as stored: what a retry, a dead letter or the next
            occurrence carries, whatever the handler did to its own copy.
        failures: failed attempts at this occurrence so far.
        occurrence_ms: the occurrence the claim belongs to: the record's, or the due time.
        max_payload_bytes: the largest payload the app accepts.
        has_hook: whether the task type has a reschedule hook.
        payload: the payload, decoded: the dict the handler is given.
        result: what the handler returned, once :meth:`call` succeeded.
    """

    @property
    def claim(self) -> Claim: ...

    @property
    def task_name(self) -> str: ...

    @property
    def payload_json(self) -> str: ...

    @property
    def failures(self) -> int: ...

    @property
    def occurrence_ms(self) -> int: ...

    @property
    def max_payload_bytes(self) -> int: ...

    @property
    def has_hook(self) -> bool: ...

    @property
    def payload(self) -> dict[str, Any]: ...

    @property
    def result(self) -> object:
        """What the handler returned, once :meth:`call` succeeded (None before)."""
        ...

    def now_ms(self) -> int:
        """The store's time now."""
        ...

    async def call(self, occurrence_ms: int, *, abort_at_ms: int | None = None) -> Exception | None:
        """Run the handler for the occurrence due at ``occurrence_ms``: None when it
        succeeded, else what it raised (a time-out included), or, for a run that was aborted
        (``App.abort``, or at ``abort_at_ms`` when given), an error saying so that
        :meth:`failed` turns into the aborted run's outcome (never a retry)."""
        ...

    async def ask_hook(self, payload: dict[str, Any]) -> object:
        """The task type's reschedule hook's answer about ``payload``, awaited."""
        ...

    def done(self, following: Next | None = None, *, hand_off_ms: int | None = None) -> Outcome:
        """The occurrence is over: the task ends, or comes due again as ``following``.
        ``hand_off_ms`` also writes the occurrence due then as a task of its own, run at once
        under the id ``"<id>@<occurrence ms>"``."""
        ...

    async def failed(
        self, error: Exception, occurrence_ms: int, state: Trigger | None, follow: Follow | None
    ) -> Outcome:
        """The run of ``occurrence_ms`` raised ``error``. While retries are left it is
        retried, keeping the occurrence and ``state``; then a task without ``follow`` goes
        to the dead letters, and one with it files the occurrence there under
        ``"<id>@<occurrence ms>"`` and goes on with what ``follow()`` returns."""
        ...

    def tell(self, kind: EventKind, **fields: Any) -> None:
        """Tell the worker's listeners of an event of this run (``dispatched`` or
        ``poll_failed``, say) with ``fields`` of :class:`~duetime.events.WorkerEvent`;
        nothing is built when no listener handles ``kind``."""
        ...

    def missed_ticks(self, latest_ms: int, count: int) -> None:
        """Tell the worker's listeners that ``count`` ticks, the latest due at
        ``latest_ms``, will not run."""
        ...
