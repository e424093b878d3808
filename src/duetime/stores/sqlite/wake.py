"""Wake-ups on SQLite: direct calls within one process, a cheap change poll across processes."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from duetime._backoff import backoff_delay
from duetime._outage import OutageLog
from duetime.clock import iso
from duetime.errors import StoreError
from duetime.stores import wire
from duetime.stores.base import ABORT_WAKE_MS, WakeCallback
from duetime.stores.sqlite.connection import connect, is_busy, map_error
from duetime.stores.sqlite.ops import Wake
from duetime.stores.sqlite.queries import Q

log = logging.getLogger(__name__)

#: How often a listener looks for commits by other processes: a task another process
#: schedules is noticed within this (plus a claim), and an idle poll costs a few
#: microseconds of CPU.
POLL_SECONDS = 0.02
#: After a failed poll: the first wait before trying again, and the cap.
RETRY_FIRST_SECONDS = 0.05
RETRY_CAP_SECONDS = 5.0


@dataclass(eq=False, slots=True)
class Listener:
    """One running :meth:`SqliteStore.listen`: its namespace, event loop and callback."""

    namespace: str
    loop: asyncio.AbstractEventLoop
    on_wake: WakeCallback
    seen: dict[str, int] = field(default_factory=dict)  # type -> last serial delivered
    aborts_seen: dict[str, int] = field(default_factory=dict)  # type -> last abort serial

    def deliver(self, task_type: str, due_ms: int, serial: int) -> None:
        """Call back (in the listener's loop) and remember the serial as delivered (an
        abort signal's in :attr:`aborts_seen`), unless it was delivered already: a writer in
        this process hands its wake-up over once its commit is back, and the poll may have
        read that commit first."""
        if due_ms == ABORT_WAKE_MS:
            if self.aborts_seen.get(task_type) == serial:
                return
            self.aborts_seen[task_type] = serial
            log.debug("abort signal: %s/%s (serial %d)", self.namespace, task_type, serial)
            self.call(task_type, due_ms)
            return
        if self.seen.get(task_type) == serial:
            return
        self.seen[task_type] = serial
        if log.isEnabledFor(logging.DEBUG):
            shown = iso(due_ms)
            log.debug(
                "wake-up: %s/%s due at %s (serial %d)", self.namespace, task_type, shown, serial
            )
        self.call(task_type, due_ms)

    def call(self, task_type: str, due_ms: int) -> None:
        try:
            self.on_wake(task_type, due_ms)
        except Exception:
            log.exception("wake-up callback failed for %s", task_type)


#: The listeners running in this process, by resolved database path. It is the one
#: module-level registry in duetime, kept on purpose: a producer and a worker in one
#: process hold separate store objects (often in separate event loops: a SyncClient runs
#: its own), and SQLite has no channel over which one connection can tell another that
#: it wrote. Without it a worker would learn of a task its own process scheduled only at
#: the next poll. Only listen() adds to it, and it removes what it added when it ends.
_LISTENERS: dict[str, set[Listener]] = {}
_LISTENERS_LOCK = threading.Lock()


def register(key: str, listener: Listener) -> None:
    with _LISTENERS_LOCK:
        _LISTENERS.setdefault(key, set()).add(listener)


def unregister(key: str, listener: Listener) -> None:
    with _LISTENERS_LOCK:
        listeners = _LISTENERS.get(key)
        if listeners is not None:
            listeners.discard(listener)
            if not listeners:
                del _LISTENERS[key]


def notify(key: str, namespace: str, wakes: Iterable[Wake]) -> None:
    """Hand committed wake-ups to this process's listeners of the same file and namespace."""
    wakes = list(wakes)
    if not wakes:
        return
    with _LISTENERS_LOCK:
        listeners = [x for x in _LISTENERS.get(key, ()) if x.namespace == namespace]
    for listener in listeners:
        for wake in wakes:
            try:
                listener.loop.call_soon_threadsafe(listener.deliver, *wake)
            except RuntimeError:  # its loop is closed: the listener is on its way out
                break


class _Reader:
    """The poller's own read connection (used on the poller's thread only)."""

    def __init__(self, path: Path, namespace: str) -> None:
        self.path = path
        self.namespace = namespace
        self.conn = connect(path)
        self.conn.text_factory = wire.text  # a type name that is not UTF-8 fails no read
        self.version = -1

    def changes(self) -> list[tuple[str, int, int, int]] | None:
        """The wake rows (type, wake serial, due ms, abort serial) if another connection
        committed since the last call, else None."""
        try:
            (version,) = self.conn.execute("PRAGMA data_version").fetchone()
            if version == self.version:
                return None
            rows = self.conn.execute(Q.read_wakes, (self.namespace,)).fetchall()
        except sqlite3.Error as exc:
            if is_busy(exc):  # a checkpoint or recovery in the way: look again next time
                return None
            raise map_error(exc, "listen", self.path) from exc
        self.version = version
        # Rows written by something else may hold anything: those that do not read are
        # left out (a wake-up is only a hint). A queue never woken has no due time yet.
        found = [(wire.text(t), wire.ms(s), wire.ms(d or 0), wire.ms(a)) for t, s, d, a in rows]
        return [row for row in found if wire.UNREADABLE_MS not in row[1:]]

    def close(self) -> None:
        self.conn.close()


async def poll(key: str, path: Path, namespace: str, on_wake: WakeCallback) -> None:
    """Deliver wake-ups to ``on_wake`` until cancelled.

    SQLite has no server to push a message through. A write that makes a task the earliest
    of its type bumps the wake serial of its queue (``wake.sql``) in the same transaction.
    Then listeners in the writing process are called at once, through :data:`_LISTENERS`,
    and listeners in other processes, here, poll ``PRAGMA data_version`` on a connection of
    their own every :data:`POLL_SECONDS`. It changes when any other connection commits and
    costs no disk read; only then is the namespace's small wake table read, and ``on_wake``
    called for each type whose serial moved. Claims and settles that make nothing earlier
    wake nobody. ``on_wake("*", 0)`` is called at the start and after a failed poll.

    Args:
        key: the database's resolved path, under which this process's listeners are kept.
        path: the database file.
        namespace: whose wake-ups to deliver.
        on_wake: called in this event loop with (task type, due ms).
    """
    loop = asyncio.get_running_loop()
    listener = Listener(namespace, loop, on_wake)
    executor = ThreadPoolExecutor(1, thread_name_prefix="duetime-sqlite-listen")
    readers: list[_Reader] = []  # opened on the thread; closed there, even if cancelled

    def open_reader() -> _Reader:
        readers.append(_Reader(path, namespace))
        return readers[-1]

    reader: _Reader | None = None
    looked = False  # whether this reader took its first look
    register(key, listener)
    outage = OutageLog(f"wake-up polls of {path}", log)
    try:
        failures = 0
        while True:
            try:
                if reader is None:
                    reader = await loop.run_in_executor(executor, open_reader)
                    looked = False
                rows = await loop.run_in_executor(executor, reader.changes)
                if rows is not None and not looked:
                    looked = True
                    listener.seen = {t: serial for t, serial, _, _ in rows}
                    listener.aborts_seen = {t: aborts for t, _, _, aborts in rows}
                    # Anything written while we were not looking is found by a full look.
                    listener.call("*", 0)
                elif rows is not None:
                    _deliver_changes(listener, rows)
                failures = 0
                delay = POLL_SECONDS
                outage.ok()
            except (StoreError, sqlite3.Error) as exc:
                failures += 1
                delay = backoff_delay(failures, RETRY_FIRST_SECONDS, RETRY_CAP_SECONDS)
                outage.failed(exc, "failed (%s); trying again", exc, expected=True)
                if reader is not None:
                    readers.remove(reader)
                    executor.submit(reader.close)
                    reader = None
            await asyncio.sleep(delay)
    finally:
        unregister(key, listener)
        for each in readers:
            executor.submit(each.close)
        executor.shutdown(wait=False)


def _deliver_changes(listener: Listener, rows: list[tuple[str, int, int, int]]) -> None:
    """Call back for each type whose wake or abort serial moved since the last look."""
    for task_type, serial, due_ms, aborts in rows:
        if serial and listener.seen.get(task_type) != serial:
            listener.deliver(task_type, due_ms, serial)
        if aborts and listener.aborts_seen.get(task_type) != aborts:
            listener.deliver(task_type, ABORT_WAKE_MS, aborts)
