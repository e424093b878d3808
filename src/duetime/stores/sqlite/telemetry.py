"""The SQLite store's :class:`~duetime.stores.telemetry.Telemetry`: two tables
(``migrations/0003_telemetry.sql``), each call one transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from duetime.stores import wire
from duetime.stores.sqlite.queries import Q
from duetime.stores.telemetry import KEEP_MINUTES, MINUTE_MS

#: Runs a function on the store's connection in a transaction: (what, fn, *args) -> result.
OnConnection = Callable[..., Awaitable[Any]]


class SqliteTelemetry:
    def __init__(self, namespace: str, write: OnConnection, read: OnConnection) -> None:
        self._ns = namespace
        self._write = write
        self._read = read

    async def beat(self, worker_id: str, record: str, until_ms: int, now_ms: int) -> None:
        def beat(conn: sqlite3.Connection) -> None:
            conn.execute(Q.forget_workers, (self._ns, now_ms))
            conn.execute(Q.beat, (self._ns, worker_id, record, until_ms))

        await self._write("beat", beat)

    async def workers(self, now_ms: int) -> list[str]:
        def workers(conn: sqlite3.Connection) -> list[str]:
            rows = conn.execute(Q.live_workers, (self._ns, now_ms)).fetchall()
            return [wire.text(record) for (record,) in rows]

        result: list[str] = await self._read("workers", workers)
        return result

    async def add_counts(self, counts: Mapping[tuple[int, str, str], int], now_ms: int) -> None:
        oldest = now_ms - now_ms % MINUTE_MS - (KEEP_MINUTES - 1) * MINUTE_MS
        rows = [(self._ns, m, t, what, n) for (m, t, what), n in counts.items() if m >= oldest]

        def add(conn: sqlite3.Connection) -> None:
            conn.executemany(Q.add_count, rows)
            conn.execute(Q.drop_counts, (self._ns, oldest))

        await self._write("add_counts", add)

    async def counts_since(self, since_ms: int) -> dict[tuple[int, str, str], int]:
        def read(conn: sqlite3.Connection) -> dict[tuple[int, str, str], int]:
            rows = conn.execute(Q.read_counts, (self._ns, since_ms)).fetchall()
            return {(m, wire.text(t), wire.text(w)): n for m, t, w, n in rows}

        result: dict[tuple[int, str, str], int] = await self._read("counts_since", read)
        return result
