"""Producer writes and reads of the SQLite store, each the body of one transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from itertools import chain
from typing import Any

from duetime.errors import LeaseLost, StoreRefused
from duetime.stores import wire
from duetime.stores.base import (
    ABORT_WAKE_MS,
    STATES,
    AbortFound,
    Claim,
    NewTask,
    State,
    StoredTask,
)
from duetime.stores.sqlite import groups, lanes
from duetime.stores.sqlite.queries import Q, repeat_row

# Each function takes the connection first and runs on the store's own thread, inside the
# transaction that connection.Database opened for it.

#: A wake-up to deliver after commit: (task type, due ms, wake serial of its queue); or an
#: abort signal: (task type, ABORT_WAKE_MS, abort serial of its queue).
Wake = tuple[str, int, int]

_LISTS = {"due": Q.list_due, "running": Q.list_running, "dead": Q.list_dead}
#: Tasks written by one statement of a big batch: the sqlite3 module spends about as long
#: per executemany() row as SQLite spends inserting it, so one statement with many rows
#: writes a batch much faster (docs/performance.md). 6 parameters a task stays far under
#: SQLite's limit of 32,766.
SCHEDULE_ROWS = 256
_SCHEDULE_MANY = repeat_row(Q.schedule, "(?, ?, ?, ?, ?, ?)", SCHEDULE_ROWS)
#: One task of ``only_new``: schedule.sql, where the id holds no task yet. A row without a
#: record (cancelled while it runs, or a dead letter moved aside) does not count as one,
#: and is written over as schedule.sql would. Row count: 1 when written, 0 when held.
_SCHEDULE_NEW = Q.schedule.rstrip() + "\nWHERE record IS NULL"


class Queues:
    """The queue id (qid) of each task type of one namespace, as far as the store met them.

    Queue rows are never deleted, so a qid found in the file stays right; a qid this
    store adds is not kept until it is found again, since its transaction may yet roll
    back. Used on the store's thread only.
    """

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self._known: dict[str, int] = {}

    def find(self, conn: sqlite3.Connection, task_type: str) -> int | None:
        """The type's qid, or None when it never had a task."""
        qid = self._known.get(task_type)
        if qid is None:
            row = conn.execute(Q.find_queue, (self.namespace, task_type)).fetchone()
            if row is None:
                return None
            qid = self._known[task_type] = int(row[0])
        return qid

    def find_or_add(self, conn: sqlite3.Connection, task_type: str) -> int:
        """The type's qid, creating its queue (in the caller's transaction) if needed."""
        qid = self.find(conn, task_type)
        if qid is None:
            (qid,) = conn.execute(Q.add_queue, (self.namespace, task_type)).fetchone()
        return int(qid)


def head_due(conn: sqlite3.Connection, qid: int) -> int | None:
    """The earliest due time of a queue, or None when nothing is due."""
    row = conn.execute(Q.head_due, (qid,)).fetchone()
    return None if row is None else wire.readable(row[0])


def wake_if_earlier(
    conn: sqlite3.Connection, qid: int, task_type: str, due: int | None, head: int | None
) -> list[Wake]:
    """Note a wake-up when ``due`` comes before ``head`` (the earliest due time before the
    write), as the Redis store publishes one; returns it for listeners in this process."""
    if due is None or (head is not None and due >= head):
        return []
    (serial,) = conn.execute(Q.wake, (due, qid)).fetchone()
    return [(task_type, due, int(serial))]


def schedule(
    conn: sqlite3.Connection,
    queues: Queues,
    task_type: str,
    tasks: Sequence[NewTask],
    only_new: bool,
    fence: int | None = None,
) -> tuple[list[Wake], list[str]]:
    """Write tasks (ids distinct, checked by the caller); see ``schedule.sql``, and
    ``_SCHEDULE_NEW`` for ``only_new``. Returns the wake-ups, and with ``only_new`` the
    ids another task holds (see ``Store.schedule``). With ``fence``, raises LeaseLost
    (before any write) when the queue's fence is above it."""
    qid = queues.find_or_add(conn, task_type)
    if fence is not None:
        (held,) = conn.execute(Q.read_fence, (qid,)).fetchone()
        if held > fence:
            raise LeaseLost(task_type, fence, f"the type's fence is at {held}")
    head = head_due(conn, qid)
    laned = lanes.prepare(conn, qid, tasks)
    grouped = groups.prepare(conn, qid, tasks)
    taken: list[str] = []
    if only_new:
        written = []
        for t in tasks:
            if conn.execute(_SCHEDULE_NEW, _values(qid, (t,), laned, grouped)).rowcount:
                written.append(t.due_ms)
            else:  # the id is held: by this very task (sent before) or by another
                held = get(conn, queues, task_type, t.id)
                if held is None or held.record != t.record:
                    taken.append(t.id)
        earliest = min(written, default=None)
    else:
        full = len(tasks) - len(tasks) % SCHEDULE_ROWS
        if full:
            chunks = (tasks[k : k + SCHEDULE_ROWS] for k in range(0, full, SCHEDULE_ROWS))
            conn.executemany(
                _SCHEDULE_MANY, (_values(qid, chunk, laned, grouped) for chunk in chunks)
            )
        conn.executemany(Q.schedule, [_values(qid, (t,), laned, grouped) for t in tasks[full:]])
        earliest = min(t.due_ms for t in tasks)
    if grouped:  # (with only_new, the ids left alone too: a turn a claim sets right)
        groups.touch(conn, qid, tasks)
    return wake_if_earlier(conn, qid, task_type, earliest, head), taken


def raise_fence(conn: sqlite3.Connection, queues: Queues, task_type: str, token: int) -> bool:
    """Raise the queue's fence to ``token`` unless it is above it; whether it was not."""
    qid = queues.find_or_add(conn, task_type)
    return bool(conn.execute(Q.raise_fence, (token, qid, token)).rowcount)


def _values(qid: int, tasks: Sequence[NewTask], laned: bool, grouped: bool) -> tuple[Any, ...]:
    if not laned and not grouped:  # priority 0 and no group: stored as NULL (lanes.py, groups.py)
        return tuple(
            chain.from_iterable((qid, t.id, t.due_ms, t.record, None, None) for t in tasks)
        )
    return tuple(
        chain.from_iterable(
            (
                qid,
                t.id,
                t.due_ms,
                t.record,
                lanes.stored(t.priority, laned),
                t.group if grouped else None,
            )
            for t in tasks
        )
    )


def put_entry(
    conn: sqlite3.Connection,
    queues: Queues,
    task_type: str,
    entries: Sequence[NewTask],
    keep_ttl: bool,
    now_ms: int,
) -> tuple[list[int], list[Wake]]:
    """Write expiring entries (see ``Store.put_entry``); (their due times, wake-ups)."""
    qid = queues.find_or_add(conn, task_type)
    head = head_due(conn, qid)
    zero = lanes.stored(0, lanes.has_lanes(conn, qid))  # an entry has priority 0
    grouped = groups.is_grouped(conn, qid)
    none = groups.stored("", grouped)  # and no group
    dues, made_due = [], []
    for entry in entries:
        row = conn.execute(Q.get, (qid, entry.id)).fetchone()
        current = None if row is None else wire.readable(row[1])
        due = entry.due_ms
        if current is not None and current > now_ms:  # live
            if keep_ttl:
                due = current
        elif current is not None:  # expired, not claimed yet: its expiry is still handled
            aside = (qid, f"{entry.id}@{current}", current, row[6] or entry.record, zero, none)
            conn.execute(Q.schedule, aside)
            made_due.append(current)
        conn.execute(Q.schedule, (qid, entry.id, due, entry.record, zero, none))
        made_due.append(due)
        dues.append(due)
    if grouped and made_due:
        conn.execute(Q.group_touch, (qid, "", min(made_due)))
    return dues, wake_if_earlier(conn, qid, task_type, min(made_due, default=None), head)


def remove_entry(
    conn: sqlite3.Connection, queues: Queues, task_type: str, task_id: str, now_ms: int
) -> bool:
    """Remove a live expiring entry (due after ``now_ms``); whether it was one."""
    qid = queues.find(conn, task_type)
    row = None if qid is None else conn.execute(Q.get, (qid, wire.param(task_id))).fetchone()
    current = None if row is None else wire.readable(row[1])
    if current is None or current <= now_ms:
        return False
    return cancel(conn, queues, task_type, task_id)


def cancel(conn: sqlite3.Connection, queues: Queues, task_type: str, task_id: str) -> bool:
    """Remove a task whatever its state; whether it existed."""
    qid = queues.find(conn, task_type)
    if qid is None:
        return False
    key = wire.param(task_id)
    row = conn.execute(Q.cancel_idle, (qid, key)).fetchone()
    if row is not None:
        return bool(row[0])
    return conn.execute(Q.cancel_running, (qid, key)).rowcount > 0


def abort(
    conn: sqlite3.Connection, queues: Queues, task_type: str, task_id: str
) -> tuple[AbortFound, list[Wake]]:
    """Mark the run holding a task's lease to abort, or cancel a task no run holds (see
    ``Store.abort``); (what was found, the abort signal for listeners in this process)."""
    qid = queues.find(conn, task_type)
    if qid is None:
        return "missing", []
    if conn.execute(Q.abort_mark, (qid, wire.param(task_id))).rowcount:
        (serial,) = conn.execute(Q.abort_signal, (qid,)).fetchone()
        return "running", [(task_type, ABORT_WAKE_MS, int(serial))]
    return ("cancelled" if cancel(conn, queues, task_type, task_id) else "missing"), []


def aborting(
    conn: sqlite3.Connection, queues: Queues, task_type: str, claims: Sequence[Claim]
) -> list[Claim]:
    """The claims whose run is marked to abort (see ``Store.aborting``)."""
    qid = queues.find(conn, task_type)
    if qid is None:
        return []
    marked = {(wire.text(i), t) for i, t in conn.execute(Q.aborting, (qid,))}
    return [claim for claim in claims if (claim.id, claim.token) in marked]


def revive(
    conn: sqlite3.Connection,
    queues: Queues,
    task_type: str,
    task_id: str,
    due_ms: int,
    record: str | None,
) -> tuple[bool, list[Wake]]:
    """Move a dead task back to due, with ``record`` if given; (whether it was dead,
    wake-ups).

    Raises:
        StoreRefused: the dead letter has no record to run (nothing is written).
    """
    qid = queues.find(conn, task_type)
    if qid is None:
        return False, []
    head = head_due(conn, qid)
    key = wire.param(task_id)
    if conn.execute(Q.revive, (due_ms, wire.param(record), qid, key)).rowcount:
        groups.touch_id(conn, qid, key)
        return True, wake_if_earlier(conn, qid, task_type, due_ms, head)
    if conn.execute(Q.is_dead, (qid, key)).fetchone() is not None:
        raise StoreRefused("bad arguments: the dead task has no record to run")
    return False, []


def hasten(
    conn: sqlite3.Connection, queues: Queues, task_type: str, task_id: str, due_ms: int
) -> tuple[bool | None, list[Wake]]:
    """Bring a waiting task forward to ``due_ms`` (see ``Store.hasten``); (whether it moved,
    or None when it does not wait; wake-ups)."""
    qid = queues.find(conn, task_type)
    if qid is None:
        return None, []
    head = head_due(conn, qid)
    key = wire.param(task_id)
    if conn.execute(Q.hasten, (due_ms, qid, key, due_ms)).rowcount:
        groups.touch_id(conn, qid, key)
        return True, wake_if_earlier(conn, qid, task_type, due_ms, head)
    row = conn.execute(Q.get, (qid, key)).fetchone()
    waits = row is not None and row[1] is not None and row[2] is None
    return (False if waits else None), []


def active_ids(conn: sqlite3.Connection, queues: Queues, task_type: str, limit: int) -> list[str]:
    """The ids of running, then waiting, tasks of a type: at most ``limit``."""
    qid = queues.find(conn, task_type)
    if qid is None:
        return []
    ids = [wire.text(row[0]) for row in conn.execute(Q.active_running, (qid, limit))]
    if len(ids) < limit:
        rows = conn.execute(Q.active_waiting, (qid, limit - len(ids)))
        ids += (wire.text(row[0]) for row in rows)
    return ids


def extend(
    conn: sqlite3.Connection,
    queues: Queues,
    task_type: str,
    claims: Sequence[Claim],
    deadline_ms: int,
) -> list[Claim]:
    """Push the lease deadline of each claim whose token holds the lease; the others."""
    qid = queues.find(conn, task_type)
    if qid is None:
        return list(claims)
    lost = []
    for claim in claims:
        if not conn.execute(Q.extend_lease, (deadline_ms, qid, claim.id, claim.token)).rowcount:
            lost.append(claim)
    return lost


def get(
    conn: sqlite3.Connection, queues: Queues, task_type: str, task_id: str
) -> StoredTask | None:
    """The task with this id: due if due (even while a run holds a lease), else running,
    else dead; None when it is none of them."""
    qid = queues.find(conn, task_type)
    row = None if qid is None else conn.execute(Q.get, (qid, wire.param(task_id))).fetchone()
    if row is None:
        return None
    return wire.stored_row(row)


def list_tasks(
    conn: sqlite3.Connection,
    queues: Queues,
    task_type: str,
    state: State,
    limit: int,
    offset: int,
) -> list[StoredTask]:
    """Tasks in one state, by score (then id)."""
    qid = queues.find(conn, task_type)
    if qid is None:
        return []
    rows: list[tuple[Any, ...]] = conn.execute(_LISTS[state], (qid, limit, offset)).fetchall()
    return [wire.stored_task(r[0], state, *r[1:]) for r in rows]


def count(conn: sqlite3.Connection, queues: Queues, task_type: str) -> dict[State, int]:
    """How many tasks are in each state."""
    qid = queues.find(conn, task_type)
    if qid is None:
        return dict.fromkeys(STATES, 0)
    row = conn.execute(Q.count_states, {"qid": qid}).fetchone()
    return dict(zip(STATES, (int(n) for n in row), strict=True))


def add_schedule_name(conn: sqlite3.Connection, namespace: str, name: str, task_type: str) -> str:
    """Give a cron schedule name to a task type unless taken; the type it belongs to."""
    conn.execute(Q.add_schedule_name, (namespace, name, task_type))
    row = conn.execute(Q.schedule_name_owner, (namespace, name)).fetchone()
    return wire.text(row[0]) if row else task_type


def remove_schedule_name(conn: sqlite3.Connection, namespace: str, name: str) -> None:
    """Forget a cron schedule name."""
    conn.execute(Q.remove_schedule_name, (namespace, name))


def schedule_names(conn: sqlite3.Connection, namespace: str) -> dict[str, str]:
    """Every cron schedule name of the namespace, with its task type."""
    rows = conn.execute(Q.schedule_names, (namespace,)).fetchall()
    return {wire.text(name): wire.text(owner) for name, owner in rows}


def task_types(conn: sqlite3.Connection, namespace: str) -> list[str]:
    """The namespace's task types that hold a task, sorted."""
    return [wire.text(name) for (name,) in conn.execute(Q.task_types, (namespace,))]
