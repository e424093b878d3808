"""The SQLite store's file, open on a thread of the store's own: every statement runs there,
in a transaction for each write (``connection.Database``), so the event loop never waits on
the disk; a job once handed to the thread runs to its end, as a command sent to a server
does."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Concatenate, ParamSpec, TypeVar

from duetime.errors import StoreError
from duetime.loops import LoopLock
from duetime.stores.sqlite.config import SqliteConfig
from duetime.stores.sqlite.connection import Database, map_error

P = ParamSpec("P")
T = TypeVar("T")

NORMAL_WARNING = (
    "SQLite runs with synchronous=normal ({path}): a power cut or an OS crash can lose "
    "the latest writes, acknowledged ones included (in a simulated power cut every commit "
    "since the last checkpoint was lost); a crash of the process alone loses nothing. "
    "Remove synchronous=normal from the URL to use synchronous=full, which loses nothing."
)


class FileOnThread:
    """The file of ``config``, opened by :meth:`open` on a thread of its own, with the jobs
    the store's methods run there (:meth:`_write` in a ``BEGIN IMMEDIATE`` transaction,
    :meth:`_read` in a read transaction)."""

    def __init__(self, config: SqliteConfig) -> None:
        self.config = config
        self._db: Database | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._key = ""
        self._warnings: list[str] = []
        # Its thread serves any loop; only the lock is the loop's.
        self._opening = LoopLock()

    # -- lifecycle ----------------------------------------------------------------------

    async def open(self) -> None:
        """Open the file (creating it if needed), switch it to WAL and migrate its schema.

        Raises:
            ConfigError: the file or its directory cannot be read, written or created;
                the message names the path and what is wrong.
            SchemaError: the file is not an SQLite database, or was written by a newer
                duetime.
            StoreUnavailable: the file stayed locked by another connection.
        """
        async with self._opening():
            if self._db is None:
                await self._open()

    async def _open(self) -> None:
        executor = ThreadPoolExecutor(1, thread_name_prefix="duetime-sqlite")
        future = executor.submit(Database.open, self.config)
        try:
            db = await asyncio.wrap_future(future)
        except BaseException:
            # Cancelled while opening: close the connection on its thread once it is made.
            future.add_done_callback(_close_opened)
            executor.shutdown(wait=False)
            raise
        self._db, self._executor = db, executor
        self._key = db.key
        self._warnings = []
        if self.config.synchronous == "normal":
            self._warnings.append(NORMAL_WARNING.format(path=self.config.path))

    async def close(self) -> None:
        """Close the connection and its thread. Safe to call twice."""
        db, executor = self._db, self._executor
        if db is None or executor is None:
            return
        self._db = self._executor = None
        try:
            await asyncio.get_running_loop().run_in_executor(executor, db.close)
        finally:
            executor.shutdown(wait=False)

    def durability_warnings(self) -> list[str]:
        """What the settings may lose on a power cut: set when synchronous is normal."""
        return list(self._warnings)

    # -- running SQL on the store's thread ----------------------------------------------

    async def _on_thread(self, what: str, job: Callable[[Database], T]) -> T:
        db, executor = self._db, self._executor
        if db is None or executor is None:
            raise StoreError("the SQLite store is not open")

        def guarded() -> T:
            try:
                return job(db)
            except sqlite3.Error as exc:
                raise map_error(exc, what, db.path) from exc

        # Once submitted, a job runs to its end even if the caller is cancelled, as a command
        # sent to a server does: the caller then does not know the outcome, but a write
        # never depends on how far the job had got through the thread's queue.
        job_future = asyncio.wrap_future(executor.submit(guarded))
        job_future.add_done_callback(_retrieve)
        return await asyncio.shield(job_future)

    async def _write(
        self,
        what: str,
        fn: Callable[Concatenate[sqlite3.Connection, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        return await self._on_thread(what, lambda db: db.write(fn, *args, **kwargs))

    async def _read(
        self,
        what: str,
        fn: Callable[Concatenate[sqlite3.Connection, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        return await self._on_thread(what, lambda db: db.read(fn, *args, **kwargs))


def _retrieve(future: asyncio.Future[Any]) -> None:
    # Marks the error of a job whose caller was cancelled as seen (it has no one to tell).
    if not future.cancelled():
        future.exception()


def _close_opened(future: Future[Database]) -> None:
    if not future.cancelled() and future.exception() is None:
        future.result().close()
