"""Fair groups on PostgreSQL (0009_groups.sql, docs/flow.md "Groups"): a queue keeps its
tasks by group once one of them has a group, and a claim under group limits
(``claim_grouped.sql``) serves the groups in turn. A queue that never had a grouped task
pays one read of a flag per write, in the write's own statement, and nothing per claim."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from duetime.stores.base import NewTask
from duetime.stores.gating import Gate
from duetime.stores.postgres.connection import Conn
from duetime.stores.postgres.queries import Q

#: Groups a grouped claim visits beyond its limit: a few groups found empty or at their
#: limits do not leave the claim short.
EXTRA_VISITS = 16


async def give_groups(conn: Conn, grouped: set[int], qid: int, tasks: Sequence[NewTask]) -> None:
    """Before ``tasks`` are written: keep the queue's tasks by group if one of them has a
    group and it does not yet (0009_groups.sql), in a transaction of its own (a savepoint
    inside the caller's) that holds writes of tasks off meanwhile, once a queue; as
    ``give_lanes``. ``grouped``: the queues known to keep their tasks by group
    (``Queues.grouped``), which this adds ``qid`` to."""
    if qid in grouped or not any(t.group for t in tasks):
        return
    async with conn.transaction():
        cur = await conn.execute(Q.read_groups, {"qid": qid})
        row = await cur.fetchone()
        if row is not None and not row[0]:
            # The queue's row first: a claim that holds it (lock_gate.sql) then ends before
            # the lock of the tasks, for which it would otherwise wait.
            cur = await conn.execute(Q.mark_groups, {"qid": qid})
            if await cur.fetchone() is not None:
                await conn.execute(Q.lock_tasks)
                await conn.execute(Q.groups_on, {"qid": qid})
    grouped.add(qid)


def claim_params(gate: Gate, limit: int) -> dict[str, Any]:
    """The parameters of claim_grouped.sql beyond claim_gated.sql's."""
    return {
        "group_interval": gate.group_interval_ms,
        "group_burst": gate.group_burst,
        "group_running": gate.group_running,
        "visits": limit + EXTRA_VISITS,
    }


class Visit(NamedTuple):
    """What a grouped claim found of the groups (the last row of claim_grouped.sql).

    Attributes:
        visited: the groups visited.
        emptied: one of them had no due task left (its turn was dropped).
        full: one with due work left is at its concurrency.
        opens_ms: when the first with due work left that its rate holds opens, or None.
    """

    visited: int
    emptied: bool
    full: bool
    opens_ms: int | None

    @classmethod
    def of(cls, row: Sequence[Any]) -> Visit:
        opens = row[9]
        return cls(
            int(row[6]), bool(row[7]), bool(row[8]), None if opens is None else -int(-opens // 1)
        )

    def look(
        self, limit: int, next_ms: int | None, lease_ms: int | None
    ) -> tuple[int | None, int | None]:
        """``(next_ms, open_ms)`` of a grouped claim that took none of the due work: when
        group limits alone hold it (every group visited is at its limits, none was found
        empty, and no group beyond them waits), the earliest lease deadline (a settle wakes
        the workers) and when the first group held by its rate opens; else as the type's
        gates said (``next_ms``, the due time: look again)."""
        held = (self.full or self.opens_ms is not None) and not self.emptied
        if held and self.visited < limit + EXTRA_VISITS:
            return lease_ms, self.opens_ms
        return next_ms, None
