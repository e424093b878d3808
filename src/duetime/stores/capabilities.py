"""Capabilities: what a store may do beyond the core :class:`~duetime.stores.base.Store`
protocol, each a protocol of its own that a store implements or not.

A feature names the capabilities it needs (``Feature.needs``); :func:`require` refuses a
store without one, naming both. Every store duetime ships has :data:`ENTRIES`,
:data:`CONDITIONAL`, :data:`SCHEDULE_NAMES`, :data:`TELEMETRY`, :data:`GATES` and
:data:`RUN_HISTORY`; only Redis has :data:`KEY_EVENTS`, and only the SQL stores
:data:`TRANSACTIONS`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, NamedTuple, Protocol, TypeVar, cast, runtime_checkable

from duetime.errors import ConfigError
from duetime.stores.base import ClaimBatch, NewTask, Outcome
from duetime.stores.conditional import Answer, Condition
from duetime.stores.gating import Gate
from duetime.stores.runs import RunLog, StoredRun
from duetime.stores.telemetry import Telemetry


@runtime_checkable
class KeyEvents(Protocol):
    """A store whose server tells which keys expire (Redis's keyspace notifications)."""

    async def enable_key_events(self) -> list[str]:
        """Make sure the server publishes the names of keys that expire (for Redis, the
        ``E`` and ``x`` flags of ``notify-keyspace-events``, added to those set, none
        removed). Returns what stops it, as messages saying what to set (``[]`` when all is
        well)."""
        ...

    async def key_expiries(self, db: int, on_key: Callable[[str], None]) -> None:
        """Call ``on_key`` with the name of every key of database ``db`` that expires, until
        cancelled; reconnects by itself. At most once: a key that expires while no
        connection listens leaves no trace."""
        ...

    async def schedule_event(
        self, task_type: str, event: str, task: NewTask, *, window_ms: int
    ) -> bool:
        """Write ``task`` unless ``event`` was turned into a task of the type in the last
        ``window_ms`` (by any process), atomically; returns whether this call wrote it.
        Every worker hears a key expire: this makes it one task."""
        ...

    def check_key_database(self, db: int) -> None:
        """Refuse a database the server does not have.

        Raises:
            ConfigError: saying which it has (a Redis Cluster has database 0 only).
        """


@runtime_checkable
class Entries(Protocol):
    """A store of expiring entries: tasks whose id is a key, due when the key expires."""

    async def put_entry(
        self, task_type: str, entries: Sequence[NewTask], *, keep_ttl: bool, now_ms: int
    ) -> list[int]:
        """Write expiring entries (ids distinct): each atomically, in order; returns, per
        entry, when it expires.

        An entry whose id is live (due after ``now_ms``) gets the record given, and the due
        time given unless ``keep_ttl`` (it keeps its own). One that expired but no worker
        claimed yet (due at or before ``now_ms``) is first moved, as it is and still due, to
        the id ``"<id>@<its due ms>"``, so that its expiry is still handled; the entry is
        then written new, as is one whose id is free, running or dead (as ``schedule``
        writes an id: a new occurrence). Wakes workers when an entry becomes the earliest
        of its type.
        """
        ...

    async def remove_entry(self, task_type: str, task_id: str, now_ms: int) -> bool:
        """Remove the entry ``task_id`` if it is live (due after ``now_ms``), atomically;
        returns whether it was. An expired entry is left to be handled."""
        ...


@runtime_checkable
class ConditionalSchedule(Protocol):
    """A store that writes tasks on conditions (``if_exists``, ``unique_for``), checked
    atomically with the write, and remembers when runs of tasks scheduled with
    ``unique_for`` finished (see :mod:`duetime.stores.conditional`)."""

    async def schedule_if(
        self, task_type: str, tasks: Sequence[Condition], now_ms: int
    ) -> list[Answer]:
        """Write tasks (ids distinct) on their conditions; returns an answer per task.

        Each task is judged against what its id holds and written in one atomic step (a
        store that cuts a big batch into parts: each part), in this order: with
        ``unique_ms``, nothing is written while the id's last remembered finish is less
        than ``unique_ms`` before ``now_ms`` (``recent``); ``keep`` writes nothing while a
        task is pending (``kept``, with its due time); ``merge`` writes nothing unless what
        is pending is what the caller found (``changed``, with what is pending now), writes
        into a task that waits its record (and its due time unless ``keep_due``; its
        occurrence, stall count and error stay), and otherwise writes as ``replace``:
        as :meth:`~duetime.stores.base.Store.schedule` does (a new occurrence; a run in
        progress keeps its lease, and its outcome will not overwrite the new occurrence).
        Wakes workers when a task becomes the earliest of its type. Sending a call twice
        gives the answers of the first.
        """
        ...


@runtime_checkable
class ScheduleNames(Protocol):
    """A store's index of named schedules (cron), unique across the namespace."""

    async def add_schedule_name(self, name: str, task_type: str) -> str:
        """Record that the schedule ``name`` lives in ``task_type``, unless the name is
        taken already; returns the task type the name belongs to, atomically."""
        ...

    async def remove_schedule_name(self, name: str) -> None:
        """Forget the schedule ``name``. Safe to call twice."""

    async def schedule_names(self) -> dict[str, str]:
        """Every schedule name of the namespace, with the task type it lives in."""
        ...


@runtime_checkable
class HasTelemetry(Protocol):
    """A store that keeps workers' heartbeats and per-minute counts for watchers."""

    @property
    def telemetry(self) -> Telemetry: ...


@runtime_checkable
class Gates(Protocol):
    """A store that keeps a task type's gates: whether it is paused, and until when it is
    held. Claims read them (``Store.claim``); these calls set them."""

    async def set_paused(self, task_type: str, paused: bool) -> bool:
        """Pause the type (no claim starts its tasks; those running finish) or resume it,
        atomically; returns whether that changed anything. Either way wakes the type's
        workers, so that a paused type stops within a wake-up and a resumed one starts."""
        ...

    async def paused_types(self) -> list[str]:
        """The store types of the namespace that are paused, sorted (partitions, named
        ``<type>#<n>``, included)."""
        ...

    async def hold(self, task_type: str, until_ms: int) -> None:
        """No claim starts a task of the type before ``until_ms`` (a later hold the type
        has already stays), atomically."""


@runtime_checkable
class RunHistory(Protocol):
    """A store that keeps a history of finished runs per task type, written with the
    settles (and the claims that reap expired leases), so that it costs no round trip of
    its own.

    A type's history holds, newest first, a run per attempt that ended: done, failed (to be
    tried again), dead (given up) or aborted. Each write of runs also trims the type's
    history, in the same atomic step, to the newest ``keep`` runs and to those that finished
    at most ``max_age_ms`` before the call's ``now_ms``; so does each claim made with the
    history's settings (to those young enough), so that runs age out while nothing new is
    recorded. The runs of a type's partitions are kept per partition.
    """

    async def settle(
        self,
        task_type: str,
        outcomes: Sequence[Outcome],
        now_ms: int,
        record: RunLog | None = None,
    ) -> list[bool]:
        """:meth:`~duetime.stores.base.Store.settle`, and with ``record``, in the same atomic
        step, a run in the type's history for each outcome kept that carries a ``note``
        (by ``record.worker``), the history then trimmed."""
        ...

    async def claim(
        self,
        task_type: str,
        *,
        now_ms: int,
        limit: int,
        lease_ms: int,
        max_stalls: int,
        at_most_once: bool,
        lookahead_ms: int = 0,
        gate: Gate | None = None,
        record: RunLog | None = None,
    ) -> ClaimBatch:
        """:meth:`~duetime.stores.base.Store.claim`, and with ``record``, in the same atomic
        step, a run in the type's history for each expired lease it sends back to due
        (``failed``) or to the dead letters (``dead``), with the error ``"lease expired"``
        and no start time or worker (neither is known); a lease that just ends (the task
        was rescheduled or cancelled while it ran) is not recorded; and the history trimmed."""
        ...

    async def runs(
        self,
        task_type: str,
        *,
        task_id: str | None = None,
        limit: int,
        since_ms: int | None = None,
    ) -> list[StoredRun]:
        """The type's runs, newest first (by the order they were written): at most
        ``limit`` (over 0), only those of ``task_id`` if given, and only those that
        finished at or after ``since_ms`` if given. Not atomic across a long history: runs
        written meanwhile may or may not be in it."""
        ...


@runtime_checkable
class SharedTransactions(Protocol):
    """A store in the application's own database, whose writes can run in the application's
    transaction (``schedule(..., connection=)``, docs/transactions.md)."""

    async def in_transaction(self, connection: object) -> Any:
        """This store (open) seen through ``connection``, the application's connection to
        the store's database: each call of the store it returns runs the store's own
        statements on that connection, inside the transaction open on it (its own
        transactions there become savepoints), and it never commits, rolls back or closes
        it; with no transaction open (autocommit) each call writes at once. Returns that
        store (a ``Store``), for the length of one call of the application's.

        Raises:
            ConfigError: ``connection`` is not a connection the store can use (its type is
                named), is closed or in a failed transaction, or reaches another database
                than the store's (named); nothing is written.
        """
        ...


P = TypeVar("P")


class Capability(NamedTuple, Generic[P]):
    """A capability as features name it: what it is called, its protocol ``P``, and what
    kind of store has it (for the message that refuses one without it)."""

    name: str
    protocol: Any  # the protocol class P (a protocol is not a concrete type[P] to mypy)
    wanted: str


KEY_EVENTS: Capability[KeyEvents] = Capability("key expiry events", KeyEvents, "a Redis store")
ENTRIES: Capability[Entries] = Capability(
    "expiring entries", Entries, "a store that keeps expiring entries"
)
CONDITIONAL: Capability[ConditionalSchedule] = Capability(
    "conditional writes", ConditionalSchedule, "a store that writes tasks on conditions"
)
SCHEDULE_NAMES: Capability[ScheduleNames] = Capability(
    "named schedules", ScheduleNames, "a store that keeps schedule names"
)
TELEMETRY: Capability[HasTelemetry] = Capability(
    "telemetry (heartbeats and per-minute counts)", HasTelemetry, "a store with telemetry"
)
GATES: Capability[Gates] = Capability(
    "gates (pause and hold a task type)", Gates, "a store that keeps a type's gates"
)
RUN_HISTORY: Capability[RunHistory] = Capability(
    "run history", RunHistory, "a store that keeps a history of runs"
)

TRANSACTIONS: Capability[SharedTransactions] = Capability(
    "transaction shared with the application",
    SharedTransactions,
    "a store in the application's database (PostgreSQL or SQLite)",
)


def has(store: object, capability: Capability[Any]) -> bool:
    """Whether ``store`` (the store object itself, not a wrapper around it) has it."""
    return isinstance(store, capability.protocol)


def use(store: object, capability: Capability[P]) -> P:
    """``store`` seen through ``capability``, which was checked when it was registered or
    the store opened (a partitioned store passes calls on to the store it wraps)."""
    return cast(P, store)


def require(store: object, capability: Capability[Any], who: str, where: str) -> None:
    """Refuse ``store`` unless it has ``capability``.

    Args:
        who: what needs it, for the message (``"key expiry handlers"``).
        where: the store, for the message (its URL, password hidden).

    Raises:
        ConfigError: naming what needs it, the store and the capability.
    """
    if not has(store, capability):
        raise ConfigError(
            f"{who} need {capability.wanted}: the store {where} ({type(store).__name__}) "
            f"has no {capability.name}"
        )
