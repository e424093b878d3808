"""The Store protocol: the one boundary between duetime's logic and where tasks live.

A store keeps, per task type, tasks in one of three states: ``due`` (waiting for their time),
``running`` (claimed under a lease) and ``dead`` (given up, kept for inspection). It moves
ids, epoch milliseconds and opaque record strings (JSON built by :mod:`duetime.record`);
it never imports task code and never interprets a payload.

Every method that changes state is atomic and may be run twice with the same result, since
a client may resend a command whose reply was lost. Driver exceptions never escape a store:
they are turned into :class:`~duetime.errors.StoreUnavailable`,
:class:`~duetime.errors.StoreRefused` (arguments or data it cannot use, refused before any
write) or :class:`~duetime.errors.StoreError`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, Protocol

from duetime.errors import StoreRefused
from duetime.stores.gating import Gate
from duetime.stores.values import (
    NOTE,
    Claim,
    ClaimBatch,
    NewTask,
    Op,
    Outcome,
    State,
    StoredTask,
    done,
    new_claim,
    noted,
)

# The values are defined in stores.values and named here too, beside the protocol.
__all__ = [
    "ABORT_WAKE_MS",
    "DURABILITIES",
    "NOTE",
    "STATES",
    "AbortFound",
    "Durability",
    "Store",
    "WakeCallback",
    "check_claim_arguments",
    "Claim",
    "ClaimBatch",
    "NewTask",
    "Op",
    "Outcome",
    "State",
    "StoredTask",
    "done",
    "new_claim",
    "noted",
]

STATES: tuple[State, ...] = ("due", "running", "dead")
#: When a write returns: once the store has it ("local"), or once a replica has it too.
Durability = Literal["local", "replicated"]
DURABILITIES: tuple[Durability, ...] = ("local", "replicated")

#: Called with (task type, due ms) when a task becomes the earliest of its type, or with
#: (task type, :data:`ABORT_WAKE_MS`) when a run of the type was marked to abort.
WakeCallback = Callable[[str, int], None]
#: The "due time" of a wake-up that says a run of the type was marked to abort
#: (:meth:`Store.abort`): the workers holding runs of the type ask which
#: (:meth:`Store.aborting`). Below every time duetime accepts.
ABORT_WAKE_MS = -1
#: What :meth:`Store.abort` found: a run it marked to abort, a task that was not running
#: (removed, as ``cancel`` does), or no task.
AbortFound = Literal["running", "cancelled", "missing"]


class Store(Protocol):
    """Where tasks live: what every store does. Each method states what it does atomically.

    What only some stores do (key expiry events) or what only some features need (expiring
    entries, named schedules, telemetry) are capabilities of their own
    (:mod:`duetime.stores.capabilities`).
    """

    @property
    def url(self) -> str:
        """The store's URL, as given (it may hold a password: see ``stores.redact``)."""
        ...

    def copy(self) -> Store:
        """A new store object with this one's settings, not open: for another event loop
        (a store's connections belong to the loop that opened them)."""
        ...

    async def open(self) -> None:
        """Connect, check the server and prepare what the store needs.

        Raises:
            StoreUnavailable: the store cannot be reached.
            ConfigError: the server is set up in a way that loses tasks.
            SchemaError: the store holds data of an unknown layout or version.
        """

    async def close(self) -> None:
        """Release connections. Safe to call twice."""

    def durability_warnings(self) -> list[str]:
        """What the store's settings may lose on a crash or power cut, found by open()."""
        ...

    async def check_settings(self) -> list[str]:
        """Settings that lose tasks, read now: a store that was fine at open() may have been
        reconfigured since (a Redis switched to evicting keys, say). Each is a message
        saying what to change; ``[]`` when there are none."""
        ...

    async def time_ms(self) -> float:
        """The store's own clock, in epoch milliseconds (one round trip)."""
        ...

    async def schedule(
        self,
        task_type: str,
        tasks: Sequence[NewTask],
        *,
        only_new: bool = False,
        fence: int | None = None,
    ) -> list[str]:
        """Write tasks: add new ids, move and update existing ones.

        A batch is written atomically, or, for a store that cuts a big batch into parts (the
        Redis store writes 1,000 tasks per script, so that one call never blocks the server
        for long), each part atomically: a failure can leave earlier parts written, and
        writing the batch again is safe.

        With ``only_new``, ids that exist already (due, running or dead) are left alone, and
        returned unless the task stored under the id has the very record given (it is this
        task, written by an earlier send of the same call). Without it, returns ``[]``.

        A scheduled id leaves the dead letters and starts a new occurrence (attempt and
        stall counts cleared). A run of the same id in progress keeps its lease, and its
        outcome will not overwrite the new occurrence. Wakes workers when a task becomes
        the earliest of its type.

        With ``fence`` (the token of a claim the write is made under: a poller's call), the
        write is made only while the type's fence (see :meth:`raise_fence`) is not above
        it, checked atomically with the write (of each part, for a batch in parts).

        Raises:
            LeaseLost: the type's fence is above ``fence``: a later claim began writing
                to the type. Nothing (of that part) was written.
        """

    async def raise_fence(self, task_type: str, token: int) -> bool:
        """Raise the type's fence to ``token`` unless it is above it already, atomically;
        returns whether it was not above (the fence is ``token`` now).

        The fence is a number kept with the type (0 at first, never lowered) that writes
        made under a claim of another type carry (``schedule(fence=...)``). A poller's call
        raises its handler type's fence to its claim's token before it reads anything, so
        once a later claim of the call began, every write of an earlier one is refused,
        even where the two types live apart (Redis Cluster). Tokens must come from one type
        (they increase per type).
        """
        ...

    async def cancel(self, task_type: str, task_id: str) -> bool:
        """Remove a task atomically, whatever its state. Returns whether it existed.

        A running task's handler finishes, but the task is neither retried nor rescheduled.
        """
        ...

    async def abort(self, task_type: str, task_id: str) -> AbortFound:
        """Mark the run that holds the task's lease to abort, or, when no run holds it,
        remove the task as :meth:`cancel` does; atomically.

        The mark goes with the lease (its token): it ends with the lease, and a later claim
        of the id is not marked. Marking wakes the type's workers with
        :data:`ABORT_WAKE_MS`; the worker holding the run finds it with :meth:`aborting`
        and ends it. The task itself is left as it is: the run's outcome says what follows
        (a one-off task ends, a series goes on). Marking a marked run again changes nothing.

        Returns:
            ``"running"`` when a run was marked, ``"cancelled"`` when a task that no run
            holds was removed, ``"missing"`` when there was no task.
        """
        ...

    async def aborting(self, task_type: str, claims: Sequence[Claim]) -> list[Claim]:
        """The claims of ``claims`` whose run is marked to abort: their token holds the
        lease, and was marked. Only reads: a claim stays marked until its lease ends.

        A worker asks about the runs it holds when woken with :data:`ABORT_WAKE_MS`, and
        as it renews their leases (a wake-up may be lost).
        """
        ...

    async def get(self, task_type: str, task_id: str) -> StoredTask | None:
        """The task with this id, or None. A running task that was rescheduled is due."""
        ...

    async def list_tasks(
        self, task_type: str, state: State, limit: int, offset: int = 0
    ) -> list[StoredTask]:
        """Tasks in one state, ordered by score (earliest first)."""
        ...

    async def count(self, task_type: str) -> dict[State, int]:
        """How many tasks are in each state."""
        ...

    async def task_types(self) -> list[str]:
        """The store types of the namespace that hold a task (due, running or dead), sorted,
        internal ones (named ``duetime.*``) and partitions (``<type>#<n>``) included: for a
        process without the handlers' code. Not atomic: a type that gets or loses its
        last task meanwhile may or may not be in it."""
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
    ) -> ClaimBatch:
        """Reap expired leases, then lease up to ``limit`` tasks due by ``now_ms +
        lookahead_ms``, as far as the type's gates allow, atomically.

        The gates: a paused type (:class:`~duetime.stores.capabilities.Gates`) and one
        held (a ``hold`` outcome) until after ``now_ms`` start nothing; ``gate`` (the
        type's limits, from its code) caps the starts by its rate (a GCRA whose state the
        store keeps: each claimed task is a start at ``now_ms``) and the tasks running
        once reaping is done by ``max_running``. A claim that finds the type at its
        global concurrency notes it, so that the settle that ends one of its runs wakes
        the workers. Tasks a gate holds back stay due; nothing about them changes. Without
        ``gate``, and while the type is neither paused nor held, a claim costs what it did
        before gates existed (see ``docs/flow.md``).

        Reaping sends a task whose lease passed back to due with one more stall, or to the
        dead letters once its stalls exceed ``max_stalls`` (at once with ``at_most_once``).
        Claiming moves each task from due to running with deadline ``now_ms + lease_ms`` and
        gives it a new token (unique and increasing per type). A task has at most one
        lease: claiming an id whose earlier run still holds one (it was rescheduled while
        it ran) takes the lease over, and the earlier run's outcomes become stale. A due id
        without a record goes to the dead letters with the reason. Due tasks are claimed
        highest priority first (:attr:`NewTask.priority`), earliest first within a
        priority; a store reads the priorities only of a type that ever had a task of
        another priority than 0.
        """
        ...

    async def settle(self, task_type: str, outcomes: Sequence[Outcome], now_ms: int) -> list[bool]:
        """Apply outcomes of runs atomically; returns, per outcome, whether it was kept.

        An outcome is kept only if its claim still holds the task's lease. Ops: ``done``
        ends the task (its record goes), ``next`` schedules the next occurrence at
        ``due_ms`` with ``record``, ``retry`` schedules another attempt at ``due_ms`` with
        ``record`` and ``error``, ``dead`` files it in the dead letters with ``record`` and
        ``error``, ``release`` hands it back to due at ``due_ms`` as it was, ``hold`` hands
        it back to due at its claim's due time as it was and holds the whole type until
        ``due_ms`` (no claim starts any of its tasks before; a later hold wins). The settle
        that ends a run of a type whose last claim found it at its global concurrency
        wakes the type's workers. A task
        rescheduled while it ran keeps the new occurrence; a task cancelled while it ran
        stays cancelled. ``dead_id`` also files a dead letter under that id with
        ``dead_record`` and ``error``. ``spawn`` also schedules a new task of the type (a
        cron tick handed off to run on its own). Stall counts and errors go with done and
        next. ``unique_ms`` (of a done or dead outcome kept: the run of a task scheduled
        with ``unique_for``) also remembers, for that long, that the task finished now, for
        a store with :data:`~duetime.stores.capabilities.CONDITIONAL` (see
        :meth:`~duetime.stores.capabilities.ConditionalSchedule.schedule_if`); a store
        without it ignores it.
        """
        ...

    async def extend(
        self, task_type: str, claims: Sequence[Claim], deadline_ms: int
    ) -> list[Claim]:
        """Move the lease deadline of claims atomically; returns the claims whose lease is lost."""
        ...

    async def revive(
        self, task_type: str, task_id: str, due_ms: int, record: str | None = None
    ) -> bool:
        """Move a dead task back to due at ``due_ms`` atomically, with ``record`` in place
        of its own if given, its stalls and error cleared; returns False if it was not dead.
        """
        ...

    async def hasten(self, task_type: str, task_id: str, due_ms: int) -> bool | None:
        """Bring a waiting task's due time forward to ``due_ms`` atomically, unless it is
        due by then; its record is untouched. Only a task that waits moves (not one that
        runs, was rescheduled while it runs, is dead or is missing), so two runs of one id
        never overlap. Wakes workers when the task becomes the earliest of its type.

        Returns:
            True when it moved, False when it was due by then already, None when it does not
            wait.
        """
        ...

    async def active_ids(self, task_type: str, limit: int) -> list[str]:
        """The ids of the type's running and waiting tasks (not the dead letters), each
        once, running ones first: at most ``limit`` (over 0), read atomically."""
        ...

    async def listen(self, on_wake: WakeCallback) -> None:
        """Call ``on_wake`` whenever a task becomes the earliest of its type, until cancelled.
        A store that wakes per type (Redis Cluster: a shard channel per type) does so for
        the types it has claimed, which are those a worker runs.

        Wake-ups are hints: one may be lost while reconnecting, so callers also wake on
        their own at the next due time they know of. Reconnects by itself, and calls
        ``on_wake("*", 0)`` (look at every type again) whenever wake-ups may have been
        missed: after connecting, and after reconnecting.
        """


def check_claim_arguments(limit: int, lease_ms: int, lookahead_ms: int) -> None:
    """Refuse a claim's arguments before anything is read: a negative limit or look-ahead,
    or a lease that is not positive (the stores that check in Python call this; the Redis
    store's script checks the same)."""
    if limit < 0 or lease_ms <= 0 or lookahead_ms < 0:
        raise StoreRefused("bad arguments: limit and look-ahead must be >= 0 and lease > 0")
