"""The SQLite store's connection: opening the file, transactions, retries, error mapping."""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from duetime._backoff import backoff_delay
from duetime.errors import ConfigError, SchemaError, StoreError, StoreUnavailable
from duetime.stores import wire
from duetime.stores.sqlite import schema
from duetime.stores.sqlite.config import SqliteConfig

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

#: Oldest SQLite library with what the store relies on: RETURNING and MATERIALIZED (3.35),
#: UPDATE ... FROM (3.33). It also needs the JSON functions, built in since 3.38 and an
#: option before (that every common build turns on): checked as the file opens.
MIN_SQLITE = (3, 35, 0)
#: A busy file is retried by this module, not by SQLite's busy handler, whose sleeps grow
#: to 100 ms: a write holds the lock only briefly, so short jittered waits
#: (doubling from the first to the cap) hand the lock over sooner and more fairly.
RETRY_FIRST_SECONDS = 0.0002
RETRY_CAP_SECONDS = 0.004
#: After a checkpoint the WAL file is truncated to this size, so that one big batch does
#: not leave a big WAL file behind.
JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024
#: The page cache of the store's connection, in KiB (SQLite's default is 2 MiB): a big batch
#: dirties several MiB of pages, and a cache that holds them all writes each page to the WAL
#: once, at commit, rather than spilling it midway (faster: docs/performance.md).
CACHE_KIB = 16 * 1024

_UNAVAILABLE = ("SQLITE_IOERR", "SQLITE_FULL", "SQLITE_CANTOPEN", "SQLITE_PROTOCOL")
_FOREIGN = ("SQLITE_NOTADB", "SQLITE_CORRUPT")
_BUSY = ("SQLITE_BUSY", "SQLITE_LOCKED")


def _code(exc: sqlite3.Error) -> str:
    return str(getattr(exc, "sqlite_errorname", "") or "")


def is_busy(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says the file is locked by another connection (worth retrying)."""
    if _code(exc).startswith(_BUSY):
        return True
    text = str(exc)
    return "database is locked" in text or "database table is locked" in text


def map_error(exc: sqlite3.Error, what: str, path: Path) -> StoreError:
    """The duetime error for a sqlite3 exception raised during ``what``."""
    code, text = _code(exc), str(exc)
    detail = f"{text} ({code})" if code else text
    if code.startswith(_FOREIGN):
        return SchemaError(f"SQLite file {path} is damaged or not a database ({what}): {detail}")
    if code.startswith(_UNAVAILABLE):
        return StoreUnavailable(f"SQLite file {path} unavailable during {what}: {detail}")
    if text.startswith(("no such table", "no such column")):
        return SchemaError(f"SQLite file {path} lacks duetime's tables ({what}): {detail}")
    return StoreError(f"SQLite error on {path} during {what}: {detail}")


def _open_error(exc: sqlite3.Error, path: Path) -> StoreError | ConfigError:
    """The error for a failure while opening: names the path and says what is wrong."""
    code = _code(exc)
    if code.startswith(_FOREIGN):
        return SchemaError(
            f"{path} is not a duetime database: SQLite says {exc} ({code}). Point the URL "
            "at another file, or move this one away"
        )
    if code.startswith(("SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM", "SQLITE_AUTH")):
        return ConfigError(f"cannot open the SQLite database {path}: {_diagnose(path, exc)}")
    return map_error(exc, "open", path)


def _diagnose(path: Path, exc: sqlite3.Error) -> str:
    """Why ``path`` could not be opened for reading and writing, as far as the file system
    tells; SQLite's own message ("unable to open database file") says little."""
    parent = path.parent
    if path.is_dir():
        return "it is a directory, not a file"
    if not parent.is_dir():
        if any(p.exists() and not p.is_dir() for p in (parent, *parent.parents)):
            return f"a part of the path is a file, not a directory (in {parent})"
        return f"the directory {parent} does not exist"
    if path.exists():
        problem = _probe(path, os.O_RDWR)
        if problem:
            return f"the file cannot be opened for reading and writing ({problem})"
    else:
        problem = _probe(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, remove=True)
        if problem:
            return f"the file cannot be created in {parent} ({problem})"
    wal = path.with_name(path.name + "-wal")
    problem = "" if wal.exists() else _probe(wal, os.O_RDWR | os.O_CREAT | os.O_EXCL, True)
    if problem or not os.access(parent, os.W_OK | os.X_OK):
        return (
            f"SQLite cannot create the -wal and -shm files it keeps next to the database in "
            f"{parent} ({problem or 'the directory is read-only'})"
        )
    return f"{exc}; check that the file and its directory {parent} are writable"


def _probe(path: Path, flags: int, remove: bool = False) -> str:
    """The error the OS gives for opening ``path`` with ``flags``, or "" when it opens."""
    try:
        os.close(os.open(path, flags, 0o644))
    except OSError as exc:
        return exc.strerror or str(exc)
    if remove:
        path.unlink(missing_ok=True)
    return ""


class Database:
    """One SQLite connection, used only by the thread that opened it.

    Every method runs SQL and so blocks: the store calls them on its own thread.
    """

    def __init__(self, conn: sqlite3.Connection, config: SqliteConfig) -> None:
        self.conn = conn
        self.config = config
        self.path = config.path
        #: The file's resolved path: what tells that two stores share a file.
        self.key = os.path.realpath(config.path)
        self.journal_mode = ""
        #: The busy retry's clock and wait (seconds): a test replaces them to hold the lock
        #: for the whole busy timeout without waiting it out.
        self.monotonic: Callable[[], float] = time.monotonic
        self.sleep: Callable[[float], None] = time.sleep

    @classmethod
    def open(cls, config: SqliteConfig) -> Database:
        """Open (or create, unless ``config.create`` is off) the file, set its pragmas and
        bring its schema up to date."""
        if sqlite3.sqlite_version_info < MIN_SQLITE:
            raise ConfigError(
                f"SQLite {sqlite3.sqlite_version} is too old: duetime needs "
                f"{'.'.join(map(str, MIN_SQLITE))} or newer (RETURNING, UPDATE FROM)"
            )
        memory = sqlite3.connect(":memory:")  # the library's, whatever the file holds
        try:
            check_json(memory)
        finally:
            memory.close()
        if not config.create and not config.path.exists():
            raise ConfigError(
                f"no SQLite database at {config.path}: the file does not exist (a read "
                "does not create it; check the path and the working directory, or start a "
                "worker or schedule a task to create it)"
            )
        try:
            conn = connect(config.path)
        except sqlite3.Error as exc:
            raise _open_error(exc, config.path) from exc
        db = cls(conn, config)
        try:
            db._prepare()
        except BaseException:
            conn.close()
            raise
        return db

    def _prepare(self) -> None:
        conn, config = self.conn, self.config
        try:
            self.journal_mode = self.retry(lambda: _set_wal(conn))
            if self.journal_mode != "wal":
                raise ConfigError(
                    f"cannot use the SQLite database {config.path}: it stays in journal mode "
                    f"{self.journal_mode!r} instead of WAL (is it on a network file system, "
                    "or held open in exclusive locking mode?)"
                )
            conn.execute(f"PRAGMA synchronous = {config.synchronous.upper()}")
            conn.execute(f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT}")
            conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            # The write lock is taken even when the schema is current, so that a file or
            # directory duetime cannot write fails here rather than at the first write.
            before = self.write(schema.migrate, config.path)
        except sqlite3.Error as exc:
            raise _open_error(exc, config.path) from exc
        if before < schema.LATEST:
            log.info(
                "SQLite database %s: schema version %d -> %d", config.path, before, schema.LATEST
            )
        log.info("SQLite store open: %s (synchronous=%s)", config.path, config.synchronous)

    def close(self) -> None:
        self.conn.close()

    # -- transactions -------------------------------------------------------------------

    def retry(self, attempt: Callable[[], T]) -> T:
        """Call ``attempt`` until the file is not busy, for at most the busy timeout.

        Raises:
            StoreUnavailable: still busy after ``busy_timeout_ms``.
        """
        deadline: float | None = None
        tries = 0
        while True:
            try:
                return attempt()
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise
                now = self.monotonic()
                if deadline is None:
                    deadline = now + self.config.busy_timeout_ms / 1000
                if now >= deadline:
                    raise StoreUnavailable(
                        f"SQLite file {self.path} stayed locked by another connection for "
                        f"more than {self.config.busy_timeout_ms} ms (busy_timeout_ms)"
                    ) from exc
                tries += 1
                wait = backoff_delay(tries, RETRY_FIRST_SECONDS, RETRY_CAP_SECONDS)
                self.sleep(min(wait, deadline - now))

    def write(
        self, fn: Callable[Concatenate[sqlite3.Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run ``fn(conn, ...)`` in one ``BEGIN IMMEDIATE`` transaction and commit it.

        Any error rolls the whole transaction back, so nothing is half-written; a busy file
        runs it again from the start, as does text that is not UTF-8 (see :meth:`_decoding`).
        """
        return self.retry(
            lambda: self._decoding(
                lambda: self._transaction(lambda: fn(self.conn, *args, **kwargs))
            )
        )

    def _decoding(self, attempt: Callable[[], T]) -> T:
        """Run ``attempt``; if a row held text that is not UTF-8 (sqlite3 then fails the whole
        read), run it again reading text with :func:`duetime.stores.wire.text`, which keeps
        such bytes as lone surrogates. The task they belong to is then judged on its own."""
        try:
            return attempt()
        except sqlite3.OperationalError as exc:
            if "Could not decode to UTF-8" not in str(exc):
                raise
        self.conn.text_factory = wire.text
        try:
            return attempt()
        finally:
            self.conn.text_factory = str

    def _transaction(self, body: Callable[[], T]) -> T:
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = body()
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    log.exception("ROLLBACK failed on %s", self.path)
            raise
        return result

    def autocommit(
        self, fn: Callable[Concatenate[sqlite3.Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run ``fn(conn, ...)``, which writes with one statement at most, outside an
        explicit transaction: SQLite makes that statement atomic on its own and commits it
        in the same call, so the store's thread lets go of the GIL once for the write and
        its commit, where a COMMIT of its own is one more time for the event loop's thread
        to take the GIL and keep it. Retried as :meth:`write`."""
        return self.retry(lambda: self._decoding(lambda: fn(self.conn, *args, **kwargs)))

    def read(
        self, fn: Callable[Concatenate[sqlite3.Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run ``fn(conn, ...)`` outside a write transaction (one statement reads a snapshot)."""
        return self.retry(lambda: self._decoding(lambda: fn(self.conn, *args, **kwargs)))


def check_json(conn: sqlite3.Connection) -> None:
    """Check that the SQLite library has its JSON functions (claims and settles hand their
    batches to SQL as JSON).

    Raises:
        ConfigError: it has not; the message says which SQLite it is.
    """
    try:
        conn.execute("SELECT json_array_length(json_group_array(1)) FROM json_each('[1]')")
    except sqlite3.Error as exc:
        raise ConfigError(
            f"SQLite {sqlite3.sqlite_version} lacks its JSON functions ({exc}), which duetime "
            "needs: they are built in since SQLite 3.38 and an option before (JSON1); use a "
            "Python whose sqlite3 module links an SQLite with them"
        ) from exc


def connect(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), without SQLite's busy
    handler (see RETRY_FIRST_SECONDS)."""
    return sqlite3.connect(path, timeout=0, isolation_level=None, cached_statements=64)


def _set_wal(conn: sqlite3.Connection) -> str:
    row = conn.execute("PRAGMA journal_mode = WAL").fetchone()
    return str(row[0]).lower() if row else ""
