"""The worker's hot path on SQLite: claim (reap, then lease) and settle, one transaction each."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from duetime.stores import wire
from duetime.stores.base import Claim, ClaimBatch, Outcome
from duetime.stores.gating import Gate, allowance, next_look
from duetime.stores.sqlite import gates
from duetime.stores.sqlite.conditional import remember_finished
from duetime.stores.sqlite.ops import Queues, Wake, head_due, wake_if_earlier
from duetime.stores.sqlite.queries import Q

# Each function takes the connection first and runs on the store's own thread, inside the
# BEGIN IMMEDIATE transaction that connection.Database opened for it: the write lock taken
# up front is what makes a claim exclusive (SQLite has no SKIP LOCKED).

#: Most expired leases reaped by one claim, so that one claim stays short; the rest are
#: reaped by the next ones.
REAP_BATCH = 1000


def claim(
    conn: sqlite3.Connection,
    queues: Queues,
    task_type: str,
    now_ms: int,
    limit: int,
    lease_ms: int,
    max_stalls: int,
    at_most_once: bool,
    lookahead_ms: int,
    gate: Gate | None = None,
) -> ClaimBatch:
    """Reap expired leases at ``now_ms``, then lease up to ``limit`` tasks due by ``now_ms +
    lookahead_ms`` that the type's gates allow, earliest first (the lease counts from now)."""
    qid = queues.find(conn, task_type)
    if qid is None:
        return ClaimBatch([], None, 0)
    reaped = conn.execute(
        Q.reap,
        {
            "qid": qid,
            "now": now_ms,
            "max_stalls": max_stalls,
            "at_most_once": int(at_most_once),
            "batch": REAP_BATCH,
        },
    ).fetchall()
    vacant = [(rid,) for rid, is_vacant in reaped if is_vacant]
    if vacant:
        conn.executemany(Q.vacate, vacant)

    before = gates.read(conn, qid, gate)
    allowed = allowance(gate, before, now_ms, limit)
    horizon = now_ms + lookahead_ms
    picked, claims = _lease(conn, qid, now_ms, horizon, allowed, lease_ms) if allowed else (0, [])
    after = gates.took(conn, qid, gate, before, now_ms, len(claims))

    row = conn.execute(Q.next_ms, {"qid": qid}).fetchone()
    due, deadline = wire.readable(row[0]), wire.readable(row[1])
    held_back = picked < limit and due is not None and due <= horizon
    next_ms, open_ms = next_look(
        gate, after, now_ms, held_back=held_back, due_ms=due, lease_ms=deadline
    )
    return ClaimBatch(claims, next_ms, len(reaped), open_ms)


def _lease(
    conn: sqlite3.Connection, qid: int, now_ms: int, horizon: int, limit: int, lease_ms: int
) -> tuple[int, list[Claim]]:
    """Lease up to ``limit`` tasks due by ``horizon``, earliest first, moving aside those
    that cannot run; (how many were picked, the claims)."""
    picked = conn.execute(Q.pick_due, (qid, horizon, limit)).fetchall()
    good, aside = [], []
    for row in picked:
        problem = _unrunnable(row[1], row[3])
        if problem is None:
            good.append(row)
        else:
            aside.append((now_ms, problem, row[0]))
    if aside:
        conn.executemany(Q.move_aside, aside)
    if not good:
        return len(picked), []
    (last,) = conn.execute(Q.take_tokens, (len(good), qid)).fetchone()
    first = int(last) - len(good) + 1
    deadline = now_ms + lease_ms
    conn.executemany(Q.lease, [(first + k, row[2], deadline, row[0]) for k, row in enumerate(good)])
    claims = [
        Claim(task_id, first + k, wire.count(stalls), wire.ms(due), wire.text(record))
        for k, (_, task_id, due, record, stalls) in enumerate(good)
    ]
    return len(picked), claims


@dataclass(slots=True)
class _Judged:
    """An outcome, and the task's state before the settle wrote anything."""

    outcome: Outcome
    rid: int
    moved: bool  # due again: rescheduled while it ran
    dead: bool


def settle(
    conn: sqlite3.Connection,
    queues: Queues,
    task_type: str,
    outcomes: Sequence[Outcome],
    now_ms: int,
) -> tuple[list[bool], list[Wake]]:
    """Apply outcomes whose claim still holds the lease; (kept flags, wake-ups).

    The same steps as the Redis store's settle.lua: every outcome is judged against the
    state before any write; a kept outcome ends its run's lease; then, in order, each
    files its dead letter (``dead_id``), schedules its ``spawn`` and applies its op unless
    the task was rescheduled (the new occurrence wins) or cancelled (it stays cancelled)
    while it ran.
    """
    qid = queues.find(conn, task_type)
    if qid is None:
        return [False] * len(outcomes), []
    kept: list[bool] = []
    judged: list[_Judged] = []
    hold_ms: int | None = None
    for outcome in outcomes:
        c = outcome.claim
        row = conn.execute(Q.settle_read, (qid, c.id)).fetchone()
        ok = row is not None and row[1] == c.token
        kept.append(ok)
        if ok:
            if outcome.op == "hold" and outcome.due_ms is not None:
                # A release, and the whole type held until the outcome's due_ms.
                hold_ms = max(outcome.due_ms, hold_ms or outcome.due_ms)
                outcome = outcome._replace(op="release", due_ms=c.due_ms)
            judged.append(_Judged(outcome, row[0], bool(row[2]), bool(row[3])))
    if not judged:
        return kept, []
    if any(j.outcome.unique_ms for j in judged):  # runs of tasks scheduled with unique_for
        remember_finished(conn, qid, [j.outcome for j in judged], now_ms)
    wakes = gates.settled(conn, qid, task_type, hold_ms, now_ms)
    head = head_due(conn, qid)

    # A done run of a task that is neither due again nor dead takes the whole row with it.
    fast = [j for j in judged if _droppable(j)]
    if fast:
        conn.executemany(Q.settle_drop, [(j.rid,) for j in fast])
    slow = [j for j in judged if not _droppable(j)]
    if not slow:
        return kept, wakes
    conn.executemany(
        Q.settle_end,
        [
            {
                "clear": int(not j.moved and j.outcome.op in ("done", "next")),
                "drop": int(not j.moved and j.outcome.op == "done"),
                "rid": j.rid,
            }
            for j in slow
        ],
    )
    made_due = [due for j in slow for due in _follow_up(conn, qid, j, now_ms)]
    conn.executemany(Q.vacate, [(j.rid,) for j in slow])
    return kept, wakes + wake_if_earlier(conn, qid, task_type, min(made_due, default=None), head)


def _follow_up(conn: sqlite3.Connection, qid: int, j: _Judged, now_ms: int) -> list[int]:
    """Write what follows one kept run's end; the due times it made due."""
    o = j.outcome
    made_due = []
    error = wire.param(o.error)
    if o.dead_id:
        conn.execute(Q.file_dead, (qid, o.dead_id, now_ms, wire.param(o.dead_record), error))
    if o.spawn is not None:  # a new occurrence, written as schedule writes one
        conn.execute(Q.schedule, (qid, o.spawn.id, o.spawn.due_ms, wire.param(o.spawn.record)))
        made_due.append(o.spawn.due_ms)
    if j.moved or o.op == "done":
        return made_due
    if o.op == "dead":
        conn.execute(Q.settle_dead, (now_ms, wire.param(o.record), error, j.rid))
        return made_due
    assert o.due_ms is not None, f"{o.op} needs a due time"
    record = None if o.op == "release" else wire.param(o.record)
    if conn.execute(
        Q.settle_due, (o.due_ms, record, error if o.op == "retry" else None, j.rid)
    ).rowcount:
        made_due.append(o.due_ms)
    return made_due


def _unrunnable(task_id: object, record: object) -> str | None:
    """Why a due row cannot be handed to a worker, or None. Its id must be UTF-8 text, for
    the settle to find it again by id."""
    if record is None:
        return "no record for this id: moved aside"
    if type(task_id) is not str or not (task_id.isascii() or wire.is_utf8(task_id)):
        return "its id is not UTF-8 text: moved aside"
    return None


def _droppable(j: _Judged) -> bool:
    o = j.outcome
    return o.op == "done" and not j.moved and not j.dead and not o.dead_id and o.spawn is None
