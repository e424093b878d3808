"""Priorities on SQLite: which due tasks a claim takes first (``0009_priorities.sql``).

A queue that never held a task of a priority other than 0 is claimed as before, by
``pick_due`` alone: the cost of priorities to it is the read of one column of its queue row.
A queue that did is claimed level by level, highest first: the levels other than 0 that
hold due tasks are found by a loose index scan (a seek a level), and each level, 0
included, gives its earliest due tasks up to what is left of the claim's limit.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from duetime.stores.sqlite.queries import Q

# Each function takes the connection first and runs on the store's own thread, inside the
# claim's BEGIN IMMEDIATE transaction.


def pick(conn: sqlite3.Connection, qid: int, horizon: int, limit: int) -> list[Any]:
    """Up to ``limit`` tasks due by ``horizon``, highest priority first, then earliest due:
    rows of ``rid, id, due_ms, record, stalls``."""
    (has_lanes,) = conn.execute(Q.read_lanes, (qid,)).fetchone()
    if not has_lanes:
        return conn.execute(Q.pick_due, (qid, horizon, limit)).fetchall()
    levels = [int(p) for (p,) in conn.execute(Q.due_levels, {"qid": qid})]
    picked: list[Any] = []
    zero_done = False
    for level in levels:
        if level < 0 and not zero_done:
            picked += conn.execute(Q.pick_zero, (qid, horizon, limit - len(picked))).fetchall()
            zero_done = True
        if len(picked) >= limit:
            return picked
        rows = conn.execute(Q.pick_level, (qid, level, horizon, limit - len(picked)))
        picked += rows.fetchall()
    if not zero_done and len(picked) < limit:
        picked += conn.execute(Q.pick_zero, (qid, horizon, limit - len(picked))).fetchall()
    return picked
