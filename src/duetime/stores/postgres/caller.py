"""The application's own connection as the PostgreSQL store's (``connection=``): the store's
statements run on it, inside its open transaction, which the application commits or rolls
back (docs/transactions.md)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar, cast

import psycopg
from psycopg import pq

from duetime.errors import ConfigError
from duetime.stores.postgres.config import PostgresConfig
from duetime.stores.postgres.connection import Conn, map_error
from duetime.stores.postgres.queries import Q

T = TypeVar("T")

#: What a store's identity is made of: the database's name, the server's start time (two
#: servers, or one restarted, differ) and whether the schema holds duetime's tasks.
Identity = tuple[str, object, bool]


class CallerDatabase:
    """Runs the store's jobs on an application's connection, one at a time, with the
    store's schema on its search path for the job's length (:meth:`run`, as
    ``connection.Database`` runs them on the pool). Never commits, rolls back or closes it."""

    def __init__(self, conn: Conn, config: PostgresConfig) -> None:
        self.conn = conn
        self.config = config
        self._turn = asyncio.Lock()  # a partitioned call runs its partitions at once

    async def run(self, what: str, job: Callable[[Conn], Awaitable[T]]) -> T:
        """``job`` on the application's connection, its driver errors mapped to duetime's.
        Not run again when it fails: the transaction is the application's."""
        async with self._turn:
            conn = self.conn
            try:
                cur = await conn.execute(Q.enter_schema, {"schema": self.config.schema})
                row = await cur.fetchone()
                assert row is not None
                try:
                    return await job(conn)
                finally:
                    if conn.info.transaction_status != pq.TransactionStatus.INERROR:
                        await conn.execute(Q.leave_schema, {"path": row[0]})
            except psycopg.Error as exc:
                raise map_error(exc, what, self.config) from exc

    async def close(self) -> None:
        """Nothing: the connection is the application's."""


def adapt(connection: object, config: PostgresConfig) -> Conn:
    """The connection as the store's statements take it: a psycopg ``AsyncConnection`` as
    it is, a sync ``Connection`` behind an async face.

    Raises:
        ConfigError: it is neither, it is closed, or its transaction failed.
    """
    if isinstance(connection, psycopg.AsyncConnection):
        conn = connection
    elif isinstance(connection, psycopg.Connection):
        conn = cast(Conn, SyncConnection(connection))
    else:
        raise ConfigError(
            f"connection=: the PostgreSQL store {config.shown} takes a psycopg 3 Connection "
            f"or AsyncConnection, not {type(connection).__module__}.{type(connection).__name__}"
        )
    if conn.closed:
        raise ConfigError("connection=: the connection is closed")
    if conn.info.transaction_status == pq.TransactionStatus.INERROR:
        raise ConfigError(
            "connection=: the connection's transaction has failed (roll it back first)"
        )
    return conn


async def identity(conn: Conn, config: PostgresConfig) -> Identity:
    """What the connection reaches (see :data:`Identity`)."""
    cur = await conn.execute(Q.caller_identity, {"tasks": f"{config.schema}.tasks"})
    row = await cur.fetchone()
    assert row is not None
    return str(row[0]), row[1], bool(row[2])


async def bind(connection: object, config: PostgresConfig, ours: Identity) -> CallerDatabase:
    """The application's connection checked against the store's database and schema
    (``ours``, read through the store's pool), ready to run the store's jobs. Its first
    statement opens the transaction of a connection that is not in autocommit mode (psycopg
    opens one on the first statement), so the store's own transactions on it are savepoints.

    Raises:
        ConfigError: not a psycopg connection, closed, in a failed transaction, or to
            another server, database or schema than the store's (named).
    """
    conn = adapt(connection, config)
    try:
        theirs = await identity(conn, config)
    except psycopg.Error as exc:
        raise map_error(exc, "connection= check", config) from exc
    if theirs[:2] != ours[:2] or not theirs[2]:
        where = f"database {theirs[0]!r}" + ("" if theirs[2] else f" (no schema {config.schema})")
        if theirs[0] == ours[0] and theirs[2]:
            where = f"database {theirs[0]!r} of another server"
        raise ConfigError(
            f"connection=: the connection reaches {where}, not the store's database "
            f"{ours[0]!r}, schema {config.schema!r} ({config.shown})"
        )
    return CallerDatabase(conn, config)


class SyncConnection:
    """A psycopg sync ``Connection`` with the async face the store's statements use
    (``execute``, ``transaction``, ``closed``, ``info``): each statement runs on a thread, so
    the event loop does not wait on the server."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    @property
    def closed(self) -> bool:
        return self._conn.closed

    @property
    def info(self) -> Any:
        return self._conn.info

    async def execute(self, query: bytes, params: dict[str, Any] | None = None) -> _Rows:
        cur = await asyncio.to_thread(self._conn.execute, query, params)
        return _Rows(cur.fetchall() if cur.description is not None else [], cur.description)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        block = self._conn.transaction()
        await asyncio.to_thread(block.__enter__)
        try:
            yield
        except BaseException as exc:
            await asyncio.to_thread(block.__exit__, type(exc), exc, exc.__traceback__)
            raise
        await asyncio.to_thread(block.__exit__, None, None, None)

    @asynccontextmanager
    async def pipeline(self) -> AsyncIterator[None]:
        yield  # statements go one by one: the same effect, more round trips


class _Rows:
    """A result read whole, with the async reads of a cursor."""

    def __init__(self, rows: Sequence[Any], description: object) -> None:
        self._rows = list(rows)
        self.description = description

    async def fetchone(self) -> Any:
        return self._rows.pop(0) if self._rows else None

    async def fetchall(self) -> list[Any]:
        rows, self._rows = self._rows, []
        return rows
