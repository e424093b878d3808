"""The application's own ``sqlite3.Connection`` as the SQLite store's (``connection=``): the
store's statements run on it, inside its open transaction, which the application commits
or rolls back (docs/transactions.md)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar, cast

from duetime.errors import ConfigError
from duetime.stores.sqlite import ops
from duetime.stores.sqlite.config import SqliteConfig
from duetime.stores.sqlite.connection import Database, map_error
from duetime.stores.sqlite.store import SqliteStore

P = ParamSpec("P")
T = TypeVar("T")

#: The savepoint each write of the store's takes inside the application's transaction.
SAVEPOINT = "duetime_write"


class CallerFile:
    """Runs the store's jobs on an application's connection (as ``connection.Database``
    runs them on the store's own): each write in a savepoint of the application's
    transaction, a read as it is; with the connection's row and text factories the
    store's own (put back after). Never commits, rolls back or closes it."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path

    def write(
        self, fn: Callable[Concatenate[sqlite3.Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``fn(conn, ...)`` in a savepoint: an error takes back its writes only (the
        application's transaction goes on)."""
        conn = self.conn
        if not conn.in_transaction and _opens_transactions(conn):
            # As the sqlite3 module would before the application's next write: the task is
            # then in the transaction the application commits.
            conn.execute(f"BEGIN {conn.isolation_level or ''}")
        return self._plain(lambda: self._in_savepoint(fn, *args, **kwargs))

    autocommit = write

    def read(
        self, fn: Callable[Concatenate[sqlite3.Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``fn(conn, ...)``, which sees the application's transaction as it is."""
        return self._plain(lambda: fn(self.conn, *args, **kwargs))

    def _in_savepoint(
        self, fn: Callable[Concatenate[sqlite3.Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        conn = self.conn
        conn.execute(f"SAVEPOINT {SAVEPOINT}")
        try:
            result = fn(conn, *args, **kwargs)
        except BaseException:
            conn.execute(f"ROLLBACK TO {SAVEPOINT}")
            conn.execute(f"RELEASE {SAVEPOINT}")
            raise
        conn.execute(f"RELEASE {SAVEPOINT}")
        return result

    def _plain(self, body: Callable[[], T]) -> T:
        conn = self.conn
        factories = conn.row_factory, conn.text_factory
        conn.row_factory, conn.text_factory = None, str
        try:
            return body()
        finally:
            conn.row_factory, conn.text_factory = factories


def _opens_transactions(conn: sqlite3.Connection) -> bool:
    """Whether the sqlite3 module opens a transaction before a write on ``conn`` (its legacy
    mode with an isolation level; ``autocommit=False`` keeps one always open)."""
    autocommit = getattr(conn, "autocommit", None)  # Python 3.12
    legacy = autocommit is None or autocommit == getattr(sqlite3, "LEGACY_TRANSACTION_CONTROL", -1)
    return legacy and conn.isolation_level is not None


def check(connection: object, path: Path) -> sqlite3.Connection:
    """The application's connection, if it is open on the store's file (as ``main``).

    Raises:
        ConfigError: not a ``sqlite3.Connection`` (its type named), closed, unusable from
            this thread, or on another file than the store's (named).
    """
    if not isinstance(connection, sqlite3.Connection):
        kind = type(connection)
        raise ConfigError(
            f"connection=: the SQLite store {path} takes a sqlite3.Connection, not "
            f"{kind.__module__}.{kind.__name__}"
        )
    try:
        rows = connection.execute("PRAGMA database_list").fetchall()
    except sqlite3.ProgrammingError as exc:  # closed, or made on another thread
        raise ConfigError(
            f"connection=: the connection cannot be used here ({exc}); a connection used "
            "from another thread than its own needs check_same_thread=False"
        ) from None
    file = next((str(row[2]) for row in rows if row[1] == "main"), "")
    if not file or not os.path.exists(file) or not os.path.samefile(file, path):
        raise ConfigError(
            f"connection=: the connection is open on {file or 'a database in memory'}, not "
            f"on the store's file {path}"
        )
    return connection


def bind(store: SqliteStore, connection: object) -> SqliteStore:
    """``store``'s calls on the application's connection (see ``SharedTransactions``)."""
    conn = check(connection, store.config.path)
    return BoundSqliteStore(store.config, CallerFile(conn, store.config.path))


class BoundSqliteStore(SqliteStore):
    """A SQLite store whose jobs run on an application's connection (:class:`CallerFile`),
    on the calling thread (the connection's own), for one call of the application's.

    Its writes hand no wake-up to this process's listeners before the application commits:
    every listener, in this process or another, hears the commit by the file watch
    (``wake.poll``), as it hears another process's."""

    def __init__(self, config: SqliteConfig, file: CallerFile) -> None:
        super().__init__(config)
        self._file = file
        self._queues = ops.Queues(config.namespace)  # what a rollback may take back stays here
        self._key = ""  # no listener is registered under it (see above)

    async def _on_thread(self, what: str, job: Callable[[Database], T]) -> T:
        try:
            return job(cast(Database, self._file))
        except sqlite3.Error as exc:
            raise map_error(exc, what, self._file.path) from exc
