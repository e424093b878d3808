"""The worker's hot path on SQLite: claim (reap, then lease) and settle."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from duetime.stores import wire
from duetime.stores.base import Claim, ClaimBatch, Outcome, new_claim
from duetime.stores.gating import Gate, allowance, next_look
from duetime.stores.runs import RunLog
from duetime.stores.sqlite import gates, groups, lanes
from duetime.stores.sqlite.conditional import remember_finished
from duetime.stores.sqlite.history import record_crashed, record_runs
from duetime.stores.sqlite.ops import Queues, Wake, head_due, wake_if_earlier
from duetime.stores.sqlite.queries import Q

# Each function takes the connection first and runs on the store's own thread, inside the
# BEGIN IMMEDIATE transaction that connection.Database opened for it (the write lock taken
# up front is what makes a claim exclusive: SQLite has no SKIP LOCKED), but settle_done,
# one statement run outside a transaction.
#
# A settle's outcomes go to SQL as JSON (json_each), a statement for the batch rather than
# one an outcome: each statement lets go of the GIL while SQLite works, and a long one lets
# the event loop's thread take it, which the store's thread then waits to have back (up to
# the interpreter's switch interval, 5 ms). A task id JSON cannot carry (see _in_json)
# takes a statement of its own. A claim still leases a statement a task: one statement for
# the batch (UPDATE ... FROM json_each(...) RETURNING) cost as much CPU and fired no faster
# (docs/performance.md, "The SQL stores' hot path").

#: Most expired leases reaped by one claim, so that one claim stays short; the rest are
#: reaped by the next ones.
REAP_BATCH = 1000

_first = itemgetter(0)


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
    record: RunLog | None = None,
) -> ClaimBatch:
    """Reap expired leases at ``now_ms`` (with ``record``, recording their runs in the
    type's history), then lease up to ``limit`` tasks due by ``now_ms + lookahead_ms`` that
    the type's gates allow, earliest first (the lease counts from now)."""
    qid = queues.find(conn, task_type)
    if qid is None:
        return ClaimBatch([], None, 0)
    reap = {
        "qid": qid,
        "now": now_ms,
        "max_stalls": max_stalls,
        "at_most_once": int(at_most_once),
        "batch": REAP_BATCH,
    }
    if record is not None:
        record_crashed(conn, qid, conn.execute(Q.expired, reap).fetchall(), record, now_ms)
    reaped = conn.execute(Q.reap, reap).fetchall()
    vacant = [(rid,) for rid, is_vacant in reaped if is_vacant]
    if vacant:
        conn.executemany(Q.vacate, vacant)
    if len(vacant) < len(reaped):  # some are due again: their groups' turns
        groups.touch_rows(conn, qid, [rid for rid, is_vacant in reaped if not is_vacant])

    before = gates.read(conn, qid, gate)
    allowed = allowance(gate, before, now_ms, limit)
    horizon = now_ms + lookahead_ms
    visit = None
    if gate is not None and gate.grouped and groups.is_grouped(conn, qid):
        visit = groups.pick(conn, qid, gate, now_ms, horizon, allowed)
        rows = visit.rows
    else:
        rows = lanes.pick(conn, qid, horizon, allowed) if allowed else []
    claims = _lease(conn, qid, now_ms, rows, lease_ms)
    if visit is not None:
        groups.visited(conn, qid, visit, now_ms)
    after = gates.took(conn, qid, gate, before, now_ms, len(claims))

    row = conn.execute(Q.next_ms, {"qid": qid}).fetchone()
    due, deadline = wire.readable(row[0]), wire.readable(row[1])
    held_back = len(rows) < limit and due is not None and due <= horizon
    next_ms, open_ms = next_look(
        gate, after, now_ms, held_back=held_back, due_ms=due, lease_ms=deadline
    )
    if visit is not None and held_back and not visit.again and allowance(gate, after, now_ms, 1):
        # The type's gates are open: the groups' limits hold what is due.
        next_ms, open_ms = groups.held(conn, qid, visit, deadline)
    return ClaimBatch(claims, next_ms, len(reaped), open_ms)


def _lease(
    conn: sqlite3.Connection, qid: int, now_ms: int, picked: list[Any], lease_ms: int
) -> list[Claim]:
    """Lease the ``picked`` due rows, moving aside those that cannot run; the claims."""
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
        return []
    (last,) = conn.execute(Q.take_tokens, (len(good), qid)).fetchone()
    first = int(last) - len(good) + 1
    deadline = now_ms + lease_ms
    conn.executemany(Q.lease, [(first + k, row[2], deadline, row[0]) for k, row in enumerate(good)])
    claims = [
        new_claim(task_id, first + k, wire.count(stalls), wire.ms(due), wire.text(record))
        for k, (_, task_id, due, record, stalls) in enumerate(good)
    ]
    return claims


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
    record: RunLog | None = None,
) -> tuple[list[bool], list[Wake]]:
    """Apply outcomes whose claim still holds the lease; (kept flags, wake-ups).

    The same steps as the Redis store's settle.lua: every outcome is judged against the
    state before any write; a kept outcome ends its run's lease; then, in order, each
    files its dead letter (``dead_id``), schedules its ``spawn`` and applies its op unless
    the task was rescheduled (the new occurrence wins) or cancelled (it stays cancelled)
    while it ran. With ``record``, the runs of the kept outcomes that carry a note go to
    the type's history, which is then trimmed.
    """
    qid = queues.find(conn, task_type)
    if qid is None:
        return [False] * len(outcomes), []
    if record is not None and settle_done(conn, queues, task_type, outcomes):
        # The common settle, in this transaction with its runs (see SqliteStore.settle).
        runs = [(o.claim.id, o.note) for o in outcomes if o.note is not None]
        record_runs(conn, qid, runs, record, now_ms)
        return [True] * len(outcomes), slot_freed(conn, queues, task_type, now_ms)
    kept, wakes = _settle(conn, qid, task_type, outcomes, now_ms)
    if record is not None:
        ran = [(o.claim.id, o.note) for o, ok in zip(outcomes, kept, strict=True) if ok]
        record_runs(conn, qid, [(i, n) for i, n in ran if n is not None], record, now_ms)
    return kept, wakes


def _settle(
    conn: sqlite3.Connection, qid: int, task_type: str, outcomes: Sequence[Outcome], now_ms: int
) -> tuple[list[bool], list[Wake]]:
    kept = [False] * len(outcomes)
    judged: list[_Judged] = []
    hold_ms: int | None = None
    for n, rid, token, moved, dead in _read(conn, qid, outcomes):
        outcome = outcomes[n]
        c = outcome.claim
        if token == c.token:
            kept[n] = True
            if outcome.op == "hold" and outcome.due_ms is not None:
                # A release, and the whole type held until the outcome's due_ms.
                hold_ms = max(outcome.due_ms, hold_ms or outcome.due_ms)
                outcome = outcome._replace(op="release", due_ms=c.due_ms)
            judged.append(_Judged(outcome, rid, bool(moved), bool(dead)))
    if not judged:
        return kept, []
    if any(j.outcome.unique_ms for j in judged):  # runs of tasks scheduled with unique_for
        remember_finished(conn, qid, [j.outcome for j in judged], now_ms)
    wakes = gates.settled(conn, qid, task_type, hold_ms, now_ms)
    # A done run of a task that is neither due again nor dead takes the whole row with it
    # (one statement for all; an id JSON cannot carry takes the slow path, which ends a
    # done run the same way, by its rid).
    fast = [j.outcome.claim for j in judged if _droppable(j) and _in_json(j.outcome.claim.id)]
    if fast:
        conn.execute(Q.settle_drop, _drop_params(qid, fast))
    slow = [j for j in judged if not (_droppable(j) and _in_json(j.outcome.claim.id))]
    if not slow:
        return kept, wakes
    head = head_due(conn, qid)  # the fast path removed no due task: as before any write
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
    if made_due:  # due again (a retry, the next occurrence, a release): their groups' turns
        groups.touch_rows(conn, qid, [j.rid for j in slow])
    return kept, wakes + wake_if_earlier(conn, qid, task_type, min(made_due, default=None), head)


def settle_done(
    conn: sqlite3.Connection, queues: Queues, task_type: str, outcomes: Sequence[Outcome]
) -> bool:
    """The common settle, whole: when every outcome is a plain "done" of a distinct id, and
    every one still holds its lease on a task neither due nor dead, delete those tasks.
    Whether it did; if not, nothing was written (run :func:`settle`, and after it did,
    :func:`slot_freed`).

    One statement (settle_drop.sql, all or nothing), which SQLite makes atomic on its own:
    run outside a transaction, its commit is part of its one step.
    """
    if not all(_plain_done(o) for o in outcomes):
        return False
    claims = [o.claim for o in outcomes]
    if len({c.id for c in claims}) < len(claims) or not all(_in_json(c.id) for c in claims):
        return False  # the full judgment handles a repeated id, or one JSON cannot carry
    qid = queues.find(conn, task_type)
    if qid is None:
        return False
    params = _drop_params(qid, claims)
    return conn.execute(Q.settle_drop, params).rowcount == len(claims)


def slot_freed(conn: sqlite3.Connection, queues: Queues, task_type: str, now_ms: int) -> list[Wake]:
    """After :func:`settle_done`: the wake-up of a type some claim found at its global
    concurrency (a slot is free), in one statement that writes nothing otherwise. Were the
    process to stop between the two, the type's workers would look again at their next
    lease deadline or idle wake-up, as when a wake-up is lost."""
    qid = queues.find(conn, task_type)
    return [] if qid is None else gates.settled(conn, qid, task_type, None, now_ms)


def _plain_done(outcome: Outcome) -> bool:
    """A run that ends its task and writes nothing else: no dead letter, no new task, no
    finish to remember (``unique_for``)."""
    return (
        outcome.op == "done"
        and not outcome.dead_id
        and outcome.spawn is None
        and not outcome.unique_ms
    )


def _drop_params(qid: int, claims: Sequence[Claim]) -> dict[str, object]:
    """settle_drop's parameters for claims whose ids JSON carries (see :func:`_in_json`)."""
    held = {c.id: c.token for c in claims}
    return {"qid": qid, "claims": json.dumps(held, ensure_ascii=False), "n": len(held)}


def _in_json(task_id: str) -> bool:
    """Whether JSON handed to SQLite carries this id intact: UTF-8 text (a lone surrogate
    cannot be sent at all) without NUL (SQLite's JSON functions end text there)."""
    if task_id.isascii():
        return "\x00" not in task_id
    return "\x00" not in task_id and wire.is_utf8(task_id)


def _read(conn: sqlite3.Connection, qid: int, outcomes: Sequence[Outcome]) -> list[list[Any]]:
    """[n, rid, token, due, dead] for the task of each outcome found (n the outcome's
    index), in the outcomes' order: settle_read.sql for all at once, settle_read_one.sql
    for each id JSON cannot carry."""
    ids = [o.claim.id if _in_json(o.claim.id) else None for o in outcomes]
    (found,) = conn.execute(
        Q.settle_read, {"qid": qid, "ids": json.dumps(ids, ensure_ascii=False)}
    ).fetchone()
    rows: list[list[Any]] = json.loads(found)
    for n, task_id in enumerate(ids):
        # An id that is not UTF-8 never comes from a claim (lease.sql moves such tasks
        # aside): it holds no lease. One holding a NUL may.
        task = outcomes[n].claim.id
        if task_id is None and wire.is_utf8(task):
            row = conn.execute(Q.settle_read_one, (qid, task)).fetchone()
            if row is not None:
                rows.append([n, *row])
    rows.sort(key=_first)
    return rows


def _follow_up(conn: sqlite3.Connection, qid: int, j: _Judged, now_ms: int) -> list[int]:
    """Write what follows one kept run's end; the due times it made due."""
    o = j.outcome
    made_due = []
    error = wire.param(o.error)
    if o.dead_id:
        conn.execute(Q.file_dead, (qid, o.dead_id, now_ms, wire.param(o.dead_record), error))
    if o.spawn is not None:  # a new occurrence, written as schedule writes one
        spawn = o.spawn
        priority = lanes.stored(spawn.priority, lanes.prepare(conn, qid, (spawn,)))
        grouped = groups.prepare(conn, qid, (spawn,))
        group = groups.stored(spawn.group, grouped)
        record = wire.param(spawn.record)
        conn.execute(Q.schedule, (qid, spawn.id, spawn.due_ms, record, priority, group))
        if grouped:
            groups.touch(conn, qid, (spawn,))
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
