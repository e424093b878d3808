"""The PostgreSQL store's :class:`~duetime.stores.telemetry.Telemetry`: two tables
(``migrations/0002_telemetry.sql``), each call one statement."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from duetime.stores.postgres.connection import Conn
from duetime.stores.postgres.queries import Q
from duetime.stores.telemetry import KEEP_MINUTES, MINUTE_MS, minute_of

T = TypeVar("T")
#: Runs a job on a connection of the store's pool: (what, job) -> its result.
Run = Callable[[str, Callable[[Conn], Awaitable[Any]]], Awaitable[Any]]


class PostgresTelemetry:
    def __init__(self, namespace: str, run: Run) -> None:
        self._ns = namespace
        self._run = run

    async def _execute(self, what: str, query: bytes, params: dict[str, Any]) -> list[Any]:
        async def job(conn: Conn) -> list[Any]:
            cur = await conn.execute(query, params)
            return await cur.fetchall() if cur.description else []

        rows: list[Any] = await self._run(what, job)
        return rows

    async def beat(self, worker_id: str, record: str, until_ms: int, now_ms: int) -> None:
        params = {"namespace": self._ns, "id": worker_id, "record": record}
        await self._execute("beat", Q.beat, {**params, "until_ms": until_ms, "now_ms": now_ms})

    async def workers(self, now_ms: int) -> list[str]:
        rows = await self._execute(
            "workers", Q.live_workers, {"namespace": self._ns, "now_ms": now_ms}
        )
        return [str(record) for (record,) in rows]

    async def add_counts(self, counts: Mapping[tuple[int, str, str], int], now_ms: int) -> None:
        oldest = minute_of(now_ms) - (KEEP_MINUTES - 1) * MINUTE_MS
        kept = [(key, n) for key, n in counts.items() if key[0] >= oldest]
        params = {
            "namespace": self._ns,
            "minutes": [m for (m, _, _), _ in kept],
            "types": [t for (_, t, _), _ in kept],
            "whats": [w for (_, _, w), _ in kept],
            "ns": [n for _, n in kept],
            "oldest_ms": oldest,
        }
        await self._execute("add_counts", Q.add_counts, params)

    async def counts_since(self, since_ms: int) -> dict[tuple[int, str, str], int]:
        rows = await self._execute(
            "counts_since", Q.read_counts, {"namespace": self._ns, "since_ms": since_ms}
        )
        return {(int(m), str(t), str(w)): int(n) for m, t, w, n in rows}
