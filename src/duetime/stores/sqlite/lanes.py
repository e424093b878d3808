"""Priorities on SQLite: what a write stores of a task's priority, and which due tasks a
claim takes first (``0009_priorities.sql``).

A queue that never held a task of a priority other than 0 stores none (NULL) and is
claimed as before, by ``pick_due`` alone: the cost of priorities to it is the read of one
column of its queue row per write and per claim. The first write of a task of another
priority sets the queue's ``lanes`` and gives its tasks priority 0; from then on every
task of the queue is in ``duetime_tasks_lanes``, and a claim takes it level by level,
highest first: the levels holding due tasks are found by a loose index scan (a seek a
level), and each gives its earliest due tasks up to what is left of the claim's limit.
Writes take turns (each runs in a BEGIN IMMEDIATE transaction), so no write can miss the
moment a queue gets lanes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from duetime.stores.sqlite.queries import Q
from duetime.stores.values import NewTask

# Each function takes the connection first and runs on the store's own thread, inside the
# transaction of the write or claim that calls it.


def has_lanes(conn: sqlite3.Connection, qid: int) -> bool:
    """Whether the queue's claims look at priorities."""
    (lanes,) = conn.execute(Q.read_lanes, (qid,)).fetchone()
    return bool(lanes)


def prepare(conn: sqlite3.Connection, qid: int, tasks: Sequence[NewTask]) -> bool:
    """Before ``tasks`` are written: give the queue lanes if one of them has a priority
    other than 0 (its earlier tasks then get priority 0); whether it has lanes."""
    if has_lanes(conn, qid):
        return True
    if not any(task.priority for task in tasks):
        return False
    if conn.execute(Q.mark_lanes, (qid,)).rowcount:
        conn.execute(Q.lanes_on, (qid,))
    return True


def stored(priority: int, lanes: bool) -> int | None:
    """What a write stores of ``priority`` in a queue with lanes or without (NULL: 0)."""
    return priority if priority or lanes else None


def pick(conn: sqlite3.Connection, qid: int, horizon: int, limit: int) -> list[Any]:
    """Up to ``limit`` tasks due by ``horizon``, highest priority first, then earliest due:
    rows of ``rid, id, due_ms, record, stalls``."""
    if not has_lanes(conn, qid):
        return conn.execute(Q.pick_due, (qid, horizon, limit)).fetchall()
    picked: list[Any] = []
    for (level,) in conn.execute(Q.due_levels, {"qid": qid}).fetchall():
        rows = conn.execute(Q.pick_level, (qid, level, horizon, limit - len(picked)))
        picked += rows.fetchall()
        if len(picked) >= limit:
            break
    return picked
