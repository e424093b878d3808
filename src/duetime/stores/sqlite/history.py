"""The SQLite store's run history: the runs a settle or a claim records, in its transaction,
and the trims that follow; the reads (see ``capabilities.RunHistory`` and
``migrations/0008_runs.sql``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, Protocol

from duetime.errors import StoreRefused
from duetime.stores import wire
from duetime.stores.history import Newest, crashed, is_plain, pack, row_runs
from duetime.stores.runs import RunLog, RunNote, StoredRun
from duetime.stores.sqlite.ops import Queues
from duetime.stores.sqlite.queries import Q


def record_runs(
    conn: sqlite3.Connection,
    qid: int,
    runs: Sequence[tuple[str, RunNote]],
    record: RunLog,
    now_ms: int,
    worker: str | None = None,
) -> None:
    """Add ``runs`` (id, note) to the queue's history (by ``record.worker`` unless ``worker``
    is given; None: unknown, for crashed runs): a row each, but the plain completions, one
    row together; then trim it."""
    if not runs:
        return
    by = record.worker if worker is None else worker or None
    keep = record.keep
    (added,) = conn.execute(Q.runs_added, (qid,)).fetchone()
    plain = [(i, n) for i, n in runs if is_plain(n) and "\n" not in i]
    singles = (
        [(i, n) for i, n in runs if not is_plain(n) or "\n" in i] if len(plain) < len(runs) else []
    )
    rows = []
    for task_id, n in singles:
        added += 1
        rows.append(
            (qid, added, n.finished_ms, keep, by, None, wire.param(task_id))
            + (n.occurrence_ms, n.attempt, n.started_ms or None, n.outcome)
            + (wire.param(n.error or None), wire.param(n.trace or None))
            + (wire.param(n.result or None),)
        )
    if plain:
        added += len(plain)
        batch = wire.param(pack(plain, now_ms))
        rows.append((qid, added, now_ms, keep, by, batch, *[None] * 8))
    conn.executemany(Q.add_run, rows)
    _trim(conn, qid, record, now_ms, added)


def _trim(
    conn: sqlite3.Connection, qid: int, record: RunLog, now_ms: int, added: int | None
) -> None:
    """Trim the queue's history by age, and by count when ``added`` says how many runs it
    has taken in all."""
    conn.execute(Q.trim_runs_age, (qid, now_ms - record.max_age_ms))
    if added is not None and added > record.keep:
        conn.execute(Q.trim_runs_count, (qid, added - record.keep))


def record_crashed(
    conn: sqlite3.Connection, qid: int, expired: list[tuple[object, ...]], record: RunLog, now: int
) -> None:
    """Record the runs of the leases the claim is about to reap (rows of expired.sql); with
    none, only drop the runs that aged out (as a worker looks for work)."""
    runs = []
    for task_id, stored, stalls, claimed_due, verdict in expired:
        text = stored if isinstance(stored, str) else None
        run = crashed(str(verdict), text, wire.count(stalls), wire.ms(claimed_due), now)
        if run is not None and isinstance(task_id, str):
            runs.append((task_id, run))
    if runs:
        record_runs(conn, qid, runs, record, now, worker="")
    else:
        _trim(conn, qid, record, now, None)


#: Rows of a queue's run history read at a time.
RUNS_PAGE = 100


def read_runs(
    conn: sqlite3.Connection,
    queues: Queues,
    task_type: str,
    task_id: str | None,
    limit: int,
    since_ms: int | None,
) -> list[StoredRun]:
    """The type's newest runs (see ``RunHistory.runs``), read a page of rows at a time."""
    qid = queues.find(conn, task_type)
    if qid is None:
        return []
    newest = Newest(task_id, limit, since_ms)
    since = -(2**62) if since_ms is None else since_ms
    before = 2**62
    while True:
        params = {"qid": qid, "since": since, "before": before, "rows": RUNS_PAGE}
        rows = conn.execute(Q.list_runs, params).fetchall()
        if newest.page([row_runs(row[1:]) for row in rows]) or len(rows) < RUNS_PAGE:
            return newest.found
        before = rows[-1][0]


class _Reading(Protocol):
    _queues: Queues

    async def _read(self, what: str, fn: Any, *args: Any) -> Any: ...


class RunReads:
    """The SQLite store's reads of its run history (a part of the store)."""

    async def runs(
        self: _Reading,
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
        found: list[StoredRun] = await self._read(
            "runs", read_runs, q, task_type, task_id, limit, since_ms
        )
        return found
