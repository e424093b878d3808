"""Fair groups on SQLite: what a write stores of a task's group, the groups' turns, and which
due tasks a claim under group limits takes (``0010_groups.sql``).

A queue that never held a task with a group stores none (NULL) and writes nothing to
``duetime_groups``: the cost of groups to it is the read of one column of its queue row per
write (and per settle or reap that makes a task due again). The first write of a task with a
group sets the queue's ``grouped`` and puts its tasks without a group in the group ''; from
then on every write that makes a task due lowers its group's ready time to that due time
(``group_touch``), so that a group with due work always has a row at or before its earliest
due task. A claim under group limits (:attr:`Gate.grouped`) of such a queue reads the first
groups in turn order, takes each one's earliest due tasks up to its share of the claim and
its own limits (its live leases, its rate), and moves each group it visited behind the
others (ready at ``max(now, its earliest due)``). Stale rows (a group whose due tasks were
taken by a claim without group limits, or cancelled) are set right when a claim meets them.
Writes take turns (each runs in a BEGIN IMMEDIATE transaction), so no write can miss the
moment a queue gets groups.

Within a claim under group limits, tasks are taken earliest due first in each group:
priorities are not applied (a claim without group limits applies them as before). The
tasks without a group (the group '') take turns as a group, and no group limit holds them.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from duetime.stores.gating import (
    Gate,
    GateState,
    after_claim,
    allowance,
    group_state,
    opens_at,
)
from duetime.stores.sqlite.queries import Q
from duetime.stores.values import NewTask

# Each function takes the connection first and runs on the store's own thread, inside the
# transaction of the write or claim that calls it.

#: Groups a claim looks at beyond its allowance: enough to pass over a few groups at their
#: limits or with stale rows and still fill the claim, few enough that a claim's cost does
#: not grow with the number of groups.
EXTRA_GROUPS = 16
#: A floor below any due time: a stale row gets its group's earliest due time as it is.
_NO_FLOOR = -(2**62)


def is_grouped(conn: sqlite3.Connection, qid: int) -> bool:
    """Whether the queue's tasks carry groups."""
    (grouped,) = conn.execute(Q.read_grouped, (qid,)).fetchone()
    return bool(grouped)


def prepare(conn: sqlite3.Connection, qid: int, tasks: Sequence[NewTask]) -> bool:
    """Before ``tasks`` are written: give the queue groups if one of them has a group (its
    earlier tasks then go to the group ''); whether it has groups."""
    if is_grouped(conn, qid):
        return True
    if not any(task.group for task in tasks):
        return False
    if conn.execute(Q.mark_grouped, (qid,)).rowcount:
        conn.execute(Q.groups_on, (qid,))
        conn.execute(Q.group_none, (qid, qid))
    return True


def stored(group: str, grouped: bool) -> str | None:
    """What a write stores of ``group`` in a queue with groups or without (NULL: none)."""
    return group if grouped else None


def touch(conn: sqlite3.Connection, qid: int, tasks: Iterable[NewTask]) -> None:
    """After ``tasks`` were written due in a queue with groups: each of their groups' turn
    comes no later than its earliest task among them."""
    earliest: dict[str, int] = {}
    for task in tasks:
        due = earliest.get(task.group)
        if due is None or task.due_ms < due:
            earliest[task.group] = task.due_ms
    conn.executemany(Q.group_touch, [(qid, group, due) for group, due in earliest.items()])


def touch_rows(conn: sqlite3.Connection, qid: int, rids: Sequence[int]) -> None:
    """After a settle or a reap made rows due again: their groups' turns, as :func:`touch`
    (nothing in a queue without groups, at the cost of reading that)."""
    if rids and is_grouped(conn, qid):
        conn.execute(Q.group_touch_rows, {"rids": json.dumps(list(rids))})


def touch_id(conn: sqlite3.Connection, qid: int, key: object) -> None:
    """After a write made the task ``key`` due (revive, hasten, merge): its group's turn."""
    if is_grouped(conn, qid):
        conn.execute(Q.group_touch_id, (qid, key))


@dataclass(slots=True)
class Visit:
    """What a claim under group limits picked, and what it found of the groups.

    Attributes:
        rows: the picked tasks, group after group in turn order (``rid, id, due_ms,
            record, stalls``).
        moved: (group, its rate time after the claim or None) of each group visited:
            served, or found at its limit.
        stale: the groups whose turn had come with nothing of theirs due by the horizon
            (a stale row: its tasks were taken by a claim without group limits, or
            cancelled).
        more: a group may have more due work the claim could take: one left unserved or
            cut to its share, or groups beyond the ones read.
        at_concurrency: a group with due work was at its group_concurrency.
        open_ms: when the first group its rate held opens, or None.
    """

    rows: list[Any] = field(default_factory=list)
    moved: list[tuple[str, float | None]] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    more: bool = False
    at_concurrency: bool = False
    open_ms: int | None = None

    @property
    def again(self) -> bool:
        """Whether the worker should claim again at once: the claim may have left work it
        could take, and it got somewhere (took tasks, or set stale rows right). A claim that
        read only groups its limits hold does not say so, even when there are more groups
        than it read: the worker then waits for a wake-up (the settle that frees a slot) or
        the time a rate opens, rather than spin through groups at their limits; the next
        claim reads the groups this one did not, since it moved these behind them."""
        return self.more and bool(self.rows or self.stale)


def pick(
    conn: sqlite3.Connection, qid: int, gate: Gate, now_ms: int, horizon: int, allowed: int
) -> Visit:
    """Up to ``allowed`` tasks due by ``horizon`` from the groups in turn, each group's
    earliest due first, no group more than its share of ``allowed`` nor more than its own
    limits allow (see the module's docstring). Writes nothing: :func:`visited` does, once
    the picked tasks are leased."""
    visit = Visit()
    if allowed <= 0:
        return visit
    most = allowed + EXTRA_GROUPS
    rows = conn.execute(Q.group_visit, {"qid": qid, "horizon": horizon, "most": most})
    found = rows.fetchall()
    visit.more = len(found) == most
    able: list[tuple[str, int, GateState | None]] = []  # (group, its limits allow, its state)
    for name, tat, first_due in found:
        if first_due is None or first_due > horizon:
            visit.stale.append(name)
        elif name == "":  # the tasks without a group: no group limit holds them
            able.append((name, allowed, None))
        else:
            state = _state(conn, qid, gate.per_group, name, tat, now_ms)
            n = allowance(gate.per_group, state, now_ms, allowed)
            if n > 0:
                able.append((name, n, state))
            else:
                _held(visit, gate.per_group, name, state, now_ms)
    if able:
        _serve(conn, qid, gate.per_group, visit, able, allowed, now_ms, horizon)
    return visit


def _state(
    conn: sqlite3.Connection, qid: int, one: Gate, name: str, tat: object, now_ms: int
) -> GateState:
    """A group's state: its live leases (counted up to its concurrency) and its rate time."""
    running = 0
    if one.max_running > 0:
        params = {"qid": qid, "group": name, "now": now_ms, "most": one.max_running}
        (running,) = conn.execute(Q.group_running, params).fetchone()
    return group_state(int(running), _number(tat))


def _held(visit: Visit, one: Gate, name: str, state: GateState, now_ms: int) -> None:
    """Note a group its limits hold: visited, and why."""
    visit.moved.append((name, None))
    _why(visit, one, state, now_ms)


def _why(visit: Visit, one: Gate, state: GateState, now_ms: int) -> None:
    """Note what holds a group whose limits allow no start now (a group this claim found
    so, or one it brought there): its concurrency, else its rate until it opens."""
    if one.max_running > 0 and state.running >= one.max_running:
        visit.at_concurrency = True
    elif (opens := opens_at(one, state, now_ms)) is not None:
        visit.open_ms = opens if visit.open_ms is None else min(visit.open_ms, opens)


def _serve(
    conn: sqlite3.Connection,
    qid: int,
    one: Gate,
    visit: Visit,
    able: list[tuple[str, int, GateState | None]],
    allowed: int,
    now_ms: int,
    horizon: int,
) -> None:
    """Take each able group's earliest due tasks in turn, up to its share of ``allowed``."""
    share = math.ceil(allowed / len(able))
    left = allowed
    for name, n, state in able:
        if left <= 0:
            visit.more = True
            return
        want = min(share, n, left)
        picked = conn.execute(Q.group_pick, (qid, name, horizon, want)).fetchall()
        visit.rows += picked
        left -= len(picked)
        if len(picked) == want and want < n:
            visit.more = True  # cut to its share, or to what the claim had left
        if state is None:  # the tasks without a group
            visit.moved.append((name, None))
            continue
        after = after_claim(one, state, now_ms, len(picked))
        visit.moved.append((name, after.tat))
        if allowance(one, after, now_ms, 1) == 0:
            # This claim brought the group to its limits: a claim that finds the rest of
            # its due work held next says so, but this one may be the last for a while.
            _why(visit, one, after, now_ms)


def visited(conn: sqlite3.Connection, qid: int, visit: Visit, now_ms: int) -> None:
    """After the claim leased what :func:`pick` picked: the visited groups' turns move
    behind the others (and their rate times on), stale rows are set right, and the rows of
    groups with nothing due and no rate time ahead go."""
    params = [{"floor": now_ms, "tat": tat, "qid": qid, "group": name} for name, tat in visit.moved]
    params += [{"floor": _NO_FLOOR, "tat": None, "qid": qid, "group": s} for s in visit.stale]
    if not params:
        return
    conn.executemany(Q.group_moved, params)
    conn.executemany(
        Q.group_drop, [{"qid": qid, "group": p["group"], "now": now_ms} for p in params]
    )


def held(
    conn: sqlite3.Connection, qid: int, visit: Visit, lease_ms: int | None
) -> tuple[int | None, int | None]:
    """``(next_ms, open_ms)`` of a claim that left due work only in groups its visit found
    at their limits (or brought there): the earliest lease deadline, and when the first
    group its rate holds opens. When a group was at its concurrency, the settle that ends
    one of the type's runs wakes its workers (the flag of the type's global concurrency).

    So too when the visit met no group with due work at all, though some is due: claims
    that took their time ``now`` earlier than another claim ahead of them in the write lock
    find the groups that one visited moved behind their horizon (to its ``now``); that
    claim noted what holds them, and the settle of their runs wakes this worker too."""
    if visit.at_concurrency or not (visit.moved or visit.stale):
        conn.execute(Q.wait_slot, (qid,))
    return lease_ms, visit.open_ms


def _number(value: object) -> float | None:
    """A stored rate time, or None when there is none (or it is not a number)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
