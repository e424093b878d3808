"""The SQLite store: one row per task in one file, every change one transaction."""

from __future__ import annotations

import time
from collections.abc import Sequence

from duetime.errors import StoreError, StoreRefused
from duetime.stores.base import (
    AbortFound,
    Claim,
    ClaimBatch,
    NewTask,
    Outcome,
    State,
    StoredTask,
    WakeCallback,
    check_claim_arguments,
)
from duetime.stores.conditional import Answer, Condition, check_conditions
from duetime.stores.gating import Gate
from duetime.stores.history import check_log
from duetime.stores.runs import RunLog
from duetime.stores.sqlite import claiming, conditional, ops, wake
from duetime.stores.sqlite.config import SqliteConfig, parse_sqlite_url
from duetime.stores.sqlite.connection import Database
from duetime.stores.sqlite.gates import SqliteGates
from duetime.stores.sqlite.history import RunReads
from duetime.stores.sqlite.telemetry import SqliteTelemetry
from duetime.stores.sqlite.thread import FileOnThread
from duetime.stores.telemetry import Telemetry

__all__ = ["SqliteConfig", "SqliteStore", "parse_sqlite_url"]


class SqliteStore(FileOnThread, SqliteGates, RunReads):
    """A :class:`~duetime.stores.base.Store` in one SQLite file, shared by processes.

    The file is in WAL mode; every write is one ``BEGIN IMMEDIATE`` transaction, retried
    while another connection holds the write lock (up to ``busy_timeout_ms``). The
    connection belongs to one thread of the store's own, on which every method runs its
    SQL, so the event loop never waits on the disk. Several apps share a file through
    namespaces. See ``migrations/0001_initial.sql`` for the tables.

    Args:
        config: the file and its settings; see :func:`parse_sqlite_url`.
    """

    def __init__(self, config: SqliteConfig) -> None:
        super().__init__(config)
        self._queues = ops.Queues(config.namespace)
        self.telemetry: Telemetry = SqliteTelemetry(config.namespace, self._write, self._read)

    @property
    def url(self) -> str:
        return self.config.url or f"sqlite:///{self.config.path}"

    def copy(self) -> SqliteStore:
        return SqliteStore(self.config)

    async def in_transaction(self, connection: object) -> SqliteStore:
        """This store with its writes and reads on ``connection`` (a ``sqlite3.Connection``
        to the store's file), inside its open transaction: see ``SharedTransactions``.

        Raises:
            ConfigError: see ``caller.check``; the store is not touched.
        """
        from duetime.stores.sqlite import caller  # it builds on this module

        if self._db is None:
            raise StoreError("the SQLite store is not open")
        return caller.bind(self, connection)

    async def check_settings(self) -> list[str]:
        """Nothing can change under an open file that would lose tasks: always ``[]``."""
        return []

    async def time_ms(self) -> float:
        """This machine's clock: SQLite has no server with a clock of its own."""
        return time.time_ns() / 1_000_000

    # -- writes -------------------------------------------------------------------------

    async def schedule(
        self,
        task_type: str,
        tasks: Sequence[NewTask],
        *,
        only_new: bool = False,
        fence: int | None = None,
    ) -> list[str]:
        """Write tasks in one transaction; within a batch the last task of an id wins.

        With ``only_new``, ids that exist already (due, running or dead) are left alone, and
        those another task holds are returned; with ``fence``, nothing is written when the
        type's fence is above it (see ``Store.schedule``).

        Raises:
            LeaseLost: the type's fence is above ``fence``.
        """
        if not tasks:
            return []
        unique = list({task.id: task for task in tasks}.values()) if len(tasks) > 1 else tasks
        for n, task in enumerate(unique):
            if not task.id or not task.record:
                raise StoreRefused(f"bad arguments: task {n} has an empty id or record")
        wakes, taken = await self._write(
            "schedule", ops.schedule, self._queues, task_type, unique, only_new, fence
        )
        wake.notify(self._key, self.config.namespace, wakes)
        return taken

    async def raise_fence(self, task_type: str, token: int) -> bool:
        """Raise the type's fence to ``token`` unless it is above it; whether it was not."""
        return await self._write("raise_fence", ops.raise_fence, self._queues, task_type, token)

    async def cancel(self, task_type: str, task_id: str) -> bool:
        """Remove a task whatever its state; a running one keeps its lease to the end."""
        return await self._write("cancel", ops.cancel, self._queues, task_type, task_id)

    async def abort(self, task_type: str, task_id: str) -> AbortFound:
        """Mark the run holding the task's lease to abort, or cancel a task no run holds."""
        found, wakes = await self._write("abort", ops.abort, self._queues, task_type, task_id)
        wake.notify(self._key, self.config.namespace, wakes)
        return found

    async def aborting(self, task_type: str, claims: Sequence[Claim]) -> list[Claim]:
        """The claims whose run is marked to abort."""
        if not claims:
            return []
        return await self._read("aborting", ops.aborting, self._queues, task_type, claims)

    async def revive(
        self, task_type: str, task_id: str, due_ms: int, record: str | None = None
    ) -> bool:
        """Move a dead task back to due at ``due_ms``, with ``record`` in place of its own if
        given, its stalls and error cleared; False if it was not dead.

        Raises:
            StoreRefused: the dead letter has no record to run.
        """
        revived, wakes = await self._write(
            "revive", ops.revive, self._queues, task_type, task_id, due_ms, record or None
        )
        wake.notify(self._key, self.config.namespace, wakes)
        return revived

    async def hasten(self, task_type: str, task_id: str, due_ms: int) -> bool | None:
        """Bring a waiting task forward to ``due_ms``; None when it does not wait."""
        moved, wakes = await self._write(
            "hasten", ops.hasten, self._queues, task_type, task_id, due_ms
        )
        wake.notify(self._key, self.config.namespace, wakes)
        return moved

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
        """Reap expired leases (with ``record``, recording their runs), then lease up to
        ``limit`` tasks due by ``now_ms + lookahead_ms`` as the type's gates allow, in one
        transaction.

        Raises:
            StoreRefused: a negative limit or look-ahead, or a lease that is not positive.
        """
        check_claim_arguments(limit, lease_ms, lookahead_ms)
        check_log(record)
        return await self._write(
            "claim",
            claiming.claim,
            self._queues,
            task_type,
            now_ms,
            limit,
            lease_ms,
            max_stalls,
            at_most_once,
            lookahead_ms,
            gate,
            record,
        )

    async def settle(
        self,
        task_type: str,
        outcomes: Sequence[Outcome],
        now_ms: int,
        record: RunLog | None = None,
    ) -> list[bool]:
        """Apply the outcomes of runs in one transaction, with ``record`` recording their
        runs in the type's history; per outcome, whether it was kept.

        The common settle (a plain completion of each run, every one still leased) is one
        statement outside a transaction, which SQLite makes atomic on its own, when no run
        is recorded; any other batch, or one of those that finds a lease lost, is judged
        outcome by outcome in one transaction (that first statement then wrote nothing).
        """
        if not outcomes:
            return []
        check_log(record)
        for o in outcomes:
            if o.op in ("next", "retry", "release", "hold") and o.due_ms is None:
                raise StoreRefused(f"bad arguments: {o.op} needs a due time")
        queues, now = self._queues, int(now_ms)

        def job(db: Database) -> tuple[list[bool], list[ops.Wake]]:
            if record is None and db.autocommit(claiming.settle_done, queues, task_type, outcomes):
                # No task made due; a slot may be free (global_concurrency).
                return [True] * len(outcomes), db.autocommit(
                    claiming.slot_freed, queues, task_type, now
                )
            return db.write(claiming.settle, queues, task_type, outcomes, now, record)

        kept, wakes = await self._on_thread("settle", job)
        wake.notify(self._key, self.config.namespace, wakes)
        return kept

    async def extend(
        self, task_type: str, claims: Sequence[Claim], deadline_ms: int
    ) -> list[Claim]:
        """Move the lease deadline of claims; returns the claims whose lease is lost."""
        if not claims:
            return []
        return await self._write("extend", ops.extend, self._queues, task_type, claims, deadline_ms)

    # -- writes on conditions ---------------------------------------------------------------

    async def schedule_if(
        self, task_type: str, tasks: Sequence[Condition], now_ms: int
    ) -> list[Answer]:
        """Write tasks on their conditions in one transaction (see
        ``ConditionalSchedule.schedule_if``)."""
        if not tasks:
            return []
        check_conditions(tasks)
        answers, wakes = await self._write(
            "schedule_if", conditional.schedule_if, self._queues, task_type, tasks, now_ms
        )
        wake.notify(self._key, self.config.namespace, wakes)
        return answers

    # -- expiring entries -----------------------------------------------------------------

    async def put_entry(
        self, task_type: str, entries: Sequence[NewTask], *, keep_ttl: bool, now_ms: int
    ) -> list[int]:
        """Write expiring entries in one transaction (see ``Store.put_entry``)."""
        if not entries:
            return []
        dues, wakes = await self._write(
            "put_entry", ops.put_entry, self._queues, task_type, entries, keep_ttl, now_ms
        )
        wake.notify(self._key, self.config.namespace, wakes)
        return dues

    async def remove_entry(self, task_type: str, task_id: str, now_ms: int) -> bool:
        """Remove a live expiring entry (due after ``now_ms``); whether it was one."""
        return await self._write(
            "remove_entry", ops.remove_entry, self._queues, task_type, task_id, now_ms
        )

    # -- reads --------------------------------------------------------------------------

    async def get(self, task_type: str, task_id: str) -> StoredTask | None:
        """The task with this id, or None; a running task rescheduled while it runs is due."""
        return await self._read("get", ops.get, self._queues, task_type, task_id)

    async def list_tasks(
        self, task_type: str, state: State, limit: int, offset: int = 0
    ) -> list[StoredTask]:
        """Tasks in one state, earliest score first (ties by id)."""
        return await self._read(
            "list", ops.list_tasks, self._queues, task_type, state, limit, offset
        )

    async def active_ids(self, task_type: str, limit: int) -> list[str]:
        """The ids of running, then waiting, tasks of a type: at most ``limit``."""
        if limit < 1:
            raise StoreRefused("bad arguments: limit must be over 0")
        return await self._read("active_ids", ops.active_ids, self._queues, task_type, limit)

    async def count(self, task_type: str) -> dict[State, int]:
        """How many tasks are due, running and dead."""
        return await self._read("count", ops.count, self._queues, task_type)

    async def task_types(self) -> list[str]:
        """The namespace's task types that hold a task (due, running or dead), sorted."""
        return await self._read("task_types", ops.task_types, self.config.namespace)

    # -- cron schedule names ------------------------------------------------------------

    async def add_schedule_name(self, name: str, task_type: str) -> str:
        """Give the cron schedule ``name`` to ``task_type`` unless the name is taken;
        returns the task type the name belongs to."""
        ns = self.config.namespace
        return await self._write("add_schedule_name", ops.add_schedule_name, ns, name, task_type)

    async def remove_schedule_name(self, name: str) -> None:
        """Forget the cron schedule ``name``. Safe to call twice."""
        ns = self.config.namespace
        await self._write("remove_schedule_name", ops.remove_schedule_name, ns, name)

    async def schedule_names(self) -> dict[str, str]:
        """Every cron schedule name of the namespace, with the task type it lives in."""
        return await self._read("schedule_names", ops.schedule_names, self.config.namespace)

    # -- wake-ups -----------------------------------------------------------------------

    async def listen(self, on_wake: WakeCallback) -> None:
        """Call ``on_wake`` when a task becomes the earliest of its type, until cancelled.

        Writes by this process call it at once; writes by other processes are noticed by
        polling ``PRAGMA data_version`` every 20 ms on a connection of its own. Calls
        ``on_wake("*", 0)`` when it starts and after a failed poll.

        Raises:
            StoreError: the store is not open.
        """
        if self._db is None:
            raise StoreError("the SQLite store is not open")
        await wake.poll(self._key, self.config.path, self.config.namespace, on_wake)
