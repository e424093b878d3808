"""Writes on conditions on SQLite (``if_exists``, ``unique_for``), and the finishes that the
settle remembers for ``unique_for``; each the body of a transaction (see ops.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from duetime.stores import wire
from duetime.stores.base import Outcome
from duetime.stores.conditional import Answer, Condition, Pending, in_store
from duetime.stores.sqlite import groups, lanes
from duetime.stores.sqlite.ops import Queues, Wake, head_due, wake_if_earlier
from duetime.stores.sqlite.queries import Q


def schedule_if(
    conn: sqlite3.Connection,
    queues: Queues,
    task_type: str,
    conditions: Sequence[Condition],
    now_ms: int,
) -> tuple[list[Answer], list[Wake]]:
    """Write tasks (ids distinct) on their conditions (see
    ``ConditionalSchedule.schedule_if``); (an answer per task, wake-ups)."""
    qid = queues.find_or_add(conn, task_type)
    head = head_due(conn, qid)
    answers = [_one(conn, qid, c, now_ms) for c in conditions]
    made_due = [a.due_ms for a in answers if a.verdict == "written" and a.due_ms is not None]
    return answers, wake_if_earlier(conn, qid, task_type, min(made_due, default=None), head)


def _one(conn: sqlite3.Connection, qid: int, c: Condition, now_ms: int) -> Answer:
    task = c.task
    if c.unique_ms:
        row = conn.execute(Q.finished_at, (qid, task.id, now_ms)).fetchone()
        if row is not None and row[0] > now_ms - c.unique_ms:
            return Answer("recent")
    row = conn.execute(Q.pending, (qid, task.id)).fetchone()
    pending: Pending = "none"
    record = ""
    if row is not None and row[3] is not None:  # a row without a record holds no task
        if row[1] is not None:
            pending = "waits"
        elif row[2] is not None:
            pending = "runs"
        if pending != "none":
            record = wire.text(row[3])
    if c.mode == "keep" and pending != "none":
        return Answer("kept", wire.ms(row[1] if pending == "waits" else row[2]))
    if c.mode == "merge" and c.changes:  # merged here, in the write transaction
        c = in_store(c, pending, record)
        task = c.task
    if c.mode == "merge" and (pending, record) != (c.pending, c.expected):
        return Answer("changed", None, pending, record)
    if c.mode == "merge" and pending == "waits":
        due = wire.ms(row[1]) if c.keep_due else task.due_ms
        conn.execute(Q.merge_into, (task.record, due, row[0]))
        groups.touch_id(conn, qid, task.id)
        return Answer("written", due)
    # a new occurrence
    priority = lanes.stored(task.priority, lanes.prepare(conn, qid, (task,)))
    grouped = groups.prepare(conn, qid, (task,))
    group = groups.stored(task.group, grouped)
    conn.execute(Q.schedule, (qid, task.id, task.due_ms, task.record, priority, group))
    if grouped:
        groups.touch(conn, qid, (task,))
    return Answer("written", task.due_ms)


def remember_finished(
    conn: sqlite3.Connection, qid: int, kept: Sequence[Outcome], now_ms: int
) -> None:
    """Remember, in the settle's transaction, when the runs of ``kept`` outcomes marked for
    ``unique_for`` finished (done or dead), each for its window; forget those whose
    window has passed."""
    rows = [
        (qid, o.claim.id, now_ms, now_ms + o.unique_ms)
        for o in kept
        if o.unique_ms and o.op in ("done", "dead")
    ]
    if rows:
        conn.execute(Q.trim_finished, (qid, now_ms))
        conn.executemany(Q.mark_finished, rows)
