"""The PostgreSQL store: one row per task in a schema of its own, claims with SKIP LOCKED."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from duetime.errors import StoreError, StoreRefused
from duetime.loops import LoopBound, LoopLock
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
from duetime.stores.postgres import caller, claiming, conditional, gates, ops, wake
from duetime.stores.postgres.caller import Identity
from duetime.stores.postgres.config import PostgresConfig, parse_postgres_url
from duetime.stores.postgres.connection import Conn, Database, Runs, read_settings
from duetime.stores.postgres.names import PostgresScheduleNames
from duetime.stores.postgres.queries import Q
from duetime.stores.postgres.telemetry import PostgresTelemetry
from duetime.stores.runs import RunLog, StoredRun
from duetime.stores.telemetry import Telemetry

__all__ = ["PostgresConfig", "PostgresStore", "parse_postgres_url"]

T = TypeVar("T")


class PostgresStore(PostgresScheduleNames):
    """A :class:`~duetime.stores.base.Store` in a schema of a PostgreSQL database.

    Connections come from a psycopg pool in autocommit mode; a write is one statement, or
    one transaction where it needs several. Claims lease a batch with one ``FOR UPDATE
    SKIP LOCKED`` statement, so workers of one type never wait for each other, and a run's
    outcome is kept only while its fencing token holds the lease. Time is the caller's
    (``now_ms``), which duetime aligns with the database's clock (:meth:`time_ms`).
    Wake-ups travel by ``NOTIFY`` at commit. Several apps share a schema through
    namespaces; see ``migrations/0001_initial.sql`` for the tables.

    Args:
        config: the database and its settings; see :func:`parse_postgres_url`.
    """

    def __init__(self, config: PostgresConfig) -> None:
        self.config = config
        self._db: Runs | None = None
        self._identity: Identity | None = None  # what in_transaction checks against
        self._queues = ops.Queues(config)
        self._warnings: list[str] = []
        self._opening = LoopLock()
        #: The loop the pool was opened in: its workers are that loop's tasks.
        self._loop = LoopBound()
        self._reopen = False  # a pool of the running loop is to be opened before a call
        self.telemetry: Telemetry = PostgresTelemetry(config.namespace, self._run)

    @property
    def url(self) -> str:
        return self.config.url or self.config.conninfo

    def copy(self) -> PostgresStore:
        return PostgresStore(self.config)

    # -- lifecycle ----------------------------------------------------------------------

    async def open(self) -> None:
        """Connect, check the server, and create or migrate the schema.

        Raises:
            StoreUnavailable: the server does not answer.
            ConfigError: the server is older than PostgreSQL 13.
            SchemaError: the schema was written by a newer duetime.
        """
        async with self._opening():
            if self._db is None:
                db = Database(self.config)
                self._warnings = await db.open()
                self._db, self._reopen = db, False
                self._loop.moved()  # the loop it was opened in

    async def close(self) -> None:
        """Close the pool. Safe to call twice."""
        if self._loop.moved():
            self._db = None  # the pool of a loop that ended: its connections go with it
        db, self._db, self._reopen = self._db, None, False
        if db is not None:
            await db.close()

    def durability_warnings(self) -> list[str]:
        """Server settings that lose committed tasks on a crash (fsync, synchronous_commit,
        full_page_writes off), as found by open()."""
        return list(self._warnings)

    async def check_settings(self) -> list[str]:
        """The same settings, read now."""
        return await self._run("check_settings", read_settings)

    async def time_ms(self) -> float:
        """The database's clock (``clock_timestamp()``), in epoch milliseconds."""

        async def now(conn: Conn) -> float:
            cur = await conn.execute(Q.now_ms)
            row = await cur.fetchone()
            assert row is not None
            return float(row[0])

        return await self._run("time_ms", now)

    async def in_transaction(self, connection: object) -> PostgresStore:
        """This store with its writes and reads on ``connection`` (a psycopg 3 connection to
        the store's database), inside its open transaction: see ``SharedTransactions``.

        Raises:
            ConfigError: see ``caller.bind``; the store is not touched.
        """
        if self._identity is None:
            config = self.config
            self._identity = await self._run("identity", lambda c: caller.identity(c, config))
        bound = PostgresStore(self.config)
        bound._db = await caller.bind(connection, self.config, self._identity)
        bound._queues = self._queues.view()
        return bound

    async def _run(self, what: str, job: Callable[[Conn], Awaitable[T]]) -> T:
        if self._loop.moved() and self._db is not None:
            # A new loop: the pool's workers were the old loop's tasks. It is let go of
            # (its connections are closed as they are collected: psycopg does not warn of
            # pooled ones), and a pool of this loop is opened.
            self._db, self._reopen = None, True
        if self._db is None and self._reopen:
            await self.open()
        if self._db is None:
            raise StoreError("the PostgreSQL store is not open")
        return await self._db.run(what, job)

    # -- writes -------------------------------------------------------------------------

    async def schedule(
        self,
        task_type: str,
        tasks: Sequence[NewTask],
        *,
        only_new: bool = False,
        fence: int | None = None,
    ) -> list[str]:
        """Write tasks in one statement; within a batch the last task of an id wins.

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
        q = self._queues
        return await self._run(
            "schedule", lambda c: ops.schedule(c, q, task_type, unique, only_new, fence)
        )

    async def schedule_if(
        self, task_type: str, tasks: Sequence[Condition], now_ms: int
    ) -> list[Answer]:
        """Write tasks on their conditions in one transaction (see
        ``ConditionalSchedule.schedule_if``)."""
        if not tasks:
            return []
        check_conditions(tasks)
        q = self._queues
        return await self._run(
            "schedule_if", lambda c: conditional.schedule_if(c, q, task_type, tasks, now_ms)
        )

    async def raise_fence(self, task_type: str, token: int) -> bool:
        """Raise the type's fence to ``token`` unless it is above it; whether it was not."""
        q = self._queues
        return await self._run("raise_fence", lambda c: ops.raise_fence(c, q, task_type, token))

    async def cancel(self, task_type: str, task_id: str) -> bool:
        """Remove a task whatever its state; a running one keeps its lease to the end."""
        return await self._run("cancel", lambda c: ops.cancel(c, self._queues, task_type, task_id))

    async def abort(self, task_type: str, task_id: str) -> AbortFound:
        """Mark the run holding the task's lease to abort, or cancel a task no run holds."""
        return await self._run("abort", lambda c: ops.abort(c, self._queues, task_type, task_id))

    async def aborting(self, task_type: str, claims: Sequence[Claim]) -> list[Claim]:
        """The claims whose run is marked to abort."""
        if not claims:
            return []
        q = self._queues
        return await self._run("aborting", lambda c: ops.aborting(c, q, task_type, claims))

    async def revive(
        self, task_type: str, task_id: str, due_ms: int, record: str | None = None
    ) -> bool:
        """Move a dead task back to due at ``due_ms``, with ``record`` in place of its own if
        given, its stalls and error cleared; False if it was not dead.

        Raises:
            StoreRefused: the dead letter has no record to run.
        """
        q = self._queues
        return await self._run(
            "revive", lambda c: ops.revive(c, q, task_type, task_id, due_ms, record or None)
        )

    async def hasten(self, task_type: str, task_id: str, due_ms: int) -> bool | None:
        """Bring a waiting task forward to ``due_ms``; None when it does not wait."""
        q = self._queues
        return await self._run("hasten", lambda c: ops.hasten(c, q, task_type, task_id, due_ms))

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
        q = self._queues
        return await self._run(
            "claim",
            lambda c: claiming.claim(
                c,
                q,
                task_type,
                now_ms,
                limit,
                lease_ms,
                max_stalls,
                at_most_once,
                lookahead_ms,
                gate,
                record,
            ),
        )

    async def settle(
        self,
        task_type: str,
        outcomes: Sequence[Outcome],
        now_ms: int,
        record: RunLog | None = None,
    ) -> list[bool]:
        """Apply the outcomes of runs, with ``record`` recording their runs in the type's
        history; per outcome, whether it was kept."""
        if not outcomes:
            return []
        check_log(record)
        for o in outcomes:
            if o.op in ("next", "retry", "release", "hold") and o.due_ms is None:
                raise StoreRefused(f"bad arguments: {o.op} needs a due time")
        q = self._queues
        return await self._run(
            "settle", lambda c: claiming.settle(c, q, task_type, outcomes, int(now_ms), record)
        )

    async def extend(
        self, task_type: str, claims: Sequence[Claim], deadline_ms: int
    ) -> list[Claim]:
        """Move the lease deadline of claims; returns the claims whose lease is lost."""
        if not claims:
            return []
        q = self._queues
        return await self._run(
            "extend", lambda c: claiming.extend(c, q, task_type, claims, deadline_ms)
        )

    # -- gates ------------------------------------------------------------------------------

    async def set_paused(self, task_type: str, paused: bool) -> bool:
        """Pause or resume a type, and wake its workers; whether that changed anything."""
        q = self._queues
        return await self._run("set_paused", lambda c: gates.set_paused(c, q, task_type, paused))

    async def paused_types(self) -> list[str]:
        """The namespace's paused types, sorted."""
        return await self._run("paused_types", lambda c: gates.paused_types(c, self._queues))

    async def hold(self, task_type: str, until_ms: int) -> None:
        """No claim of the type starts a task before ``until_ms``."""
        q = self._queues
        await self._run("hold", lambda c: gates.hold(c, q, task_type, until_ms))

    # -- expiring entries -----------------------------------------------------------------

    async def put_entry(
        self, task_type: str, entries: Sequence[NewTask], *, keep_ttl: bool, now_ms: int
    ) -> list[int]:
        """Write expiring entries in one transaction (see ``Store.put_entry``)."""
        if not entries:
            return []
        q = self._queues
        return await self._run(
            "put_entry", lambda c: ops.put_entry(c, q, task_type, entries, keep_ttl, now_ms)
        )

    async def remove_entry(self, task_type: str, task_id: str, now_ms: int) -> bool:
        """Remove a live expiring entry (due after ``now_ms``); whether it was one."""
        q = self._queues
        return await self._run(
            "remove_entry", lambda c: ops.remove_entry(c, q, task_type, task_id, now_ms)
        )

    # -- reads --------------------------------------------------------------------------

    async def get(self, task_type: str, task_id: str) -> StoredTask | None:
        """The task with this id, or None; a running task rescheduled while it runs is due."""
        return await self._run("get", lambda c: ops.get(c, self._queues, task_type, task_id))

    async def list_tasks(
        self, task_type: str, state: State, limit: int, offset: int = 0
    ) -> list[StoredTask]:
        """Tasks in one state, earliest score first (ties by id)."""
        q = self._queues
        return await self._run(
            "list", lambda c: ops.list_tasks(c, q, task_type, state, limit, offset)
        )

    async def active_ids(self, task_type: str, limit: int) -> list[str]:
        """The ids of running, then waiting, tasks of a type: at most ``limit``."""
        if limit < 1:
            raise StoreRefused("bad arguments: limit must be over 0")
        q = self._queues
        return await self._run("active_ids", lambda c: ops.active_ids(c, q, task_type, limit))

    async def runs(
        self,
        task_type: str,
        *,
        task_id: str | None = None,
        limit: int,
        since_ms: int | None = None,
    ) -> list[StoredRun]:
        """The type's newest runs, of ``task_id`` if given, finished since ``since_ms``."""
        if limit < 1:
            raise StoreRefused("bad arguments: limit must be over 0")
        q = self._queues
        return await self._run(
            "runs", lambda c: claiming.read_runs(c, q, task_type, task_id, limit, since_ms)
        )

    async def count(self, task_type: str) -> dict[State, int]:
        """How many tasks are due, running and dead."""
        return await self._run("count", lambda c: ops.count(c, self._queues, task_type))

    async def task_types(self) -> list[str]:
        """The namespace's task types that hold a task (due, running or dead), sorted."""
        ns = self.config.namespace

        async def read(conn: Conn) -> list[str]:
            cur = await conn.execute(Q.task_types, {"namespace": ns})
            return [str(name) for (name,) in await cur.fetchall()]

        return await self._run("task_types", read)

    # -- wake-ups -----------------------------------------------------------------------

    async def listen(self, on_wake: WakeCallback) -> None:
        """Call ``on_wake`` when a task becomes the earliest of its type, until cancelled:
        ``LISTEN`` on a connection of its own, which reconnects by itself. Calls
        ``on_wake("*", 0)`` after every (re)connection.

        Raises:
            StoreError: the store is not open.
        """
        if self._db is None:
            raise StoreError("the PostgreSQL store is not open")
        await wake.listen(self.config, on_wake)
