"""A task type's gates on SQLite: read and written by claims and settles inside their
transactions, and set by pause, resume and holds (the columns of ``0007_gates.sql``; the
arithmetic is :mod:`duetime.stores.gating`'s)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from duetime.stores import wire
from duetime.stores.gating import Gate, GateState, after_claim, full
from duetime.stores.sqlite import wake
from duetime.stores.sqlite.config import SqliteConfig
from duetime.stores.sqlite.ops import Queues, Wake
from duetime.stores.sqlite.queries import Q

T = TypeVar("T")

# Each function takes the connection first and runs on the store's own thread, inside the
# BEGIN IMMEDIATE transaction that connection.Database opened for it.


def read(conn: sqlite3.Connection, qid: int, gate: Gate | None) -> GateState:
    """The queue's gates, and (under a global concurrency) its tasks holding a lease."""
    paused, hold_ms, tat = conn.execute(Q.gate_read, (qid,)).fetchone()
    running = 0
    if gate is not None and gate.max_running > 0:
        (running,) = conn.execute(Q.count_running, (qid,)).fetchone()
    return GateState(bool(paused), wire.readable(hold_ms), _number(tat), int(running))


def took(
    conn: sqlite3.Connection, qid: int, gate: Gate | None, state: GateState, now_ms: int, n: int
) -> GateState:
    """Write what a claim that started ``n`` tasks leaves in the gates; the state after."""
    after = after_claim(gate, state, now_ms, n)
    if gate is not None and (after.tat != state.tat or full(gate, after)):
        conn.execute(Q.gate_took, (after.tat, int(full(gate, after)), qid))
    return after


def settled(
    conn: sqlite3.Connection,
    qid: int,
    task_type: str,
    hold_ms: int | None,
    now_ms: int,
) -> list[Wake]:
    """What a settle that ended runs writes to the gates: the hold of a handler's
    RateLimited, and, when some claim found the type at its global concurrency, a wake-up
    (a slot is free)."""
    if hold_ms is not None:
        conn.execute(Q.hold, (hold_ms, qid, hold_ms))
    row = conn.execute(Q.gate_woken, (now_ms, qid)).fetchone()
    return [] if row is None else [(task_type, now_ms, int(row[0]))]


def set_paused(
    conn: sqlite3.Connection, queues: Queues, task_type: str, paused: bool
) -> tuple[bool, list[Wake]]:
    """Pause or resume a type; (whether it changed, the wake-up for its workers)."""
    qid = queues.find_or_add(conn, task_type)
    changed = conn.execute(Q.set_paused, (int(paused), qid, int(paused))).rowcount > 0
    (serial,) = conn.execute(Q.wake, (0, qid)).fetchone()
    return changed, [(task_type, 0, int(serial))]


def hold(conn: sqlite3.Connection, queues: Queues, task_type: str, until_ms: int) -> None:
    """No claim of the type starts a task before ``until_ms``."""
    qid = queues.find_or_add(conn, task_type)
    conn.execute(Q.hold, (until_ms, qid, until_ms))


def paused_types(conn: sqlite3.Connection, namespace: str) -> list[str]:
    """The paused types of the namespace, sorted."""
    return [wire.text(name) for (name,) in conn.execute(Q.paused_types, (namespace,))]


def _number(value: object) -> float | None:
    """A stored rate time, or None when there is none (or it is not a number)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


class _Core(Protocol):
    """What the gates use of the store."""

    config: SqliteConfig
    _key: str
    _queues: Queues

    async def _write(self, what: str, fn: Callable[..., T], *args: Any) -> T: ...

    async def _read(self, what: str, fn: Callable[..., T], *args: Any) -> T: ...


class SqliteGates:
    """The SQLite store's calls on a type's gates (the ``Gates`` capability), as a part of
    :class:`~.store.SqliteStore`."""

    async def set_paused(self: _Core, task_type: str, paused: bool) -> bool:
        """Pause or resume a type, and wake its workers; whether that changed anything."""
        changed, wakes = await self._write(
            "set_paused", set_paused, self._queues, task_type, paused
        )
        wake.notify(self._key, self.config.namespace, wakes)
        return changed

    async def paused_types(self: _Core) -> list[str]:
        """The namespace's paused types, sorted."""
        return await self._read("paused_types", paused_types, self.config.namespace)

    async def hold(self: _Core, task_type: str, until_ms: int) -> None:
        """No claim of the type starts a task before ``until_ms``."""
        await self._write("hold", hold, self._queues, task_type, until_ms)
