"""Writes on conditions on PostgreSQL (``if_exists``, ``unique_for``), and the finishes that
the settle remembers for ``unique_for``.

A conditional write locks the row of each id it judges (``FOR UPDATE``) before it reads the
finishes, so a settle of the same id waits for it or is seen whole; where no row exists, it
adds one only while none holds a pending task (``insert_free.sql``), and judges again when
another transaction added one meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence

from duetime.errors import StoreError
from duetime.stores.base import Outcome
from duetime.stores.conditional import Answer, Condition, Pending, in_store
from duetime.stores.postgres.connection import Conn
from duetime.stores.postgres.groups import give_groups
from duetime.stores.postgres.ops import Queues, give_lanes, wake, write
from duetime.stores.postgres.queries import Q

#: How often one task is judged again when other transactions keep adding and removing a
#: pending task under its id between its read and its write (each time, one committed).
RACE_TRIES = 10


async def schedule_if(
    conn: Conn, queues: Queues, task_type: str, conditions: Sequence[Condition], now_ms: int
) -> list[Answer]:
    """Write tasks (ids distinct) on their conditions in one transaction (see
    ``ConditionalSchedule.schedule_if``); an answer per task."""
    qid = await queues.find_or_add(conn, task_type)
    await give_lanes(conn, queues, qid, [c.task for c in conditions])  # before any lock
    await give_groups(conn, queues.grouped, qid, [c.task for c in conditions])
    async with conn.transaction():
        cur = await conn.execute(Q.head_due, {"qid": qid})
        row = await cur.fetchone()
        head, db_now = (None, 0) if row is None else row
        answers = [await _one(conn, queues, qid, task_type, c, now_ms) for c in conditions]
        made_due = [a.due_ms for a in answers if a.verdict == "written" and a.due_ms is not None]
        earliest = min(made_due, default=None)
        if earliest is not None and (head is None or earliest < head or head <= db_now):
            await wake(conn, queues, task_type, earliest)
    return answers


async def _one(
    conn: Conn, queues: Queues, qid: int, task_type: str, c: Condition, now_ms: int
) -> Answer:
    task, asked = c.task, c
    key = {"qid": qid, "id": task.id}
    for _ in range(RACE_TRIES):
        cur = await conn.execute(Q.pending, key)
        row = await cur.fetchone()
        if c.unique_ms:  # read after the lock: a settle of the id has committed, or waits
            cur = await conn.execute(Q.finished_at, {**key, "now": now_ms})
            finished = await cur.fetchone()
            if finished is not None and finished[0] > now_ms - c.unique_ms:
                return Answer("recent")
        waits, runs, held = (None, None, None) if row is None else row
        pending: Pending = "none"
        record = ""
        if held is not None:  # a row without a record holds no task
            pending = "waits" if waits is not None else "runs" if runs is not None else "none"
            record = held if pending != "none" else ""
        if c.mode == "keep" and pending != "none":
            return Answer("kept", waits if pending == "waits" else runs)
        if asked.mode == "merge" and asked.changes:  # merged here: the row is locked
            c = in_store(asked, pending, record)
            task = c.task
        if c.mode == "merge" and (pending, record) != (c.pending, c.expected):
            return Answer("changed", None, pending, record)
        if c.mode == "merge" and pending == "waits":
            due = waits if c.keep_due else task.due_ms
            await conn.execute(Q.merge_into, {**key, "record": task.record, "due": due})
            return Answer("written", due)
        if row is not None or c.mode == "replace":  # the row is locked, or anything goes
            await write(conn, queues, qid, task_type, [task])
            return Answer("written", task.due_ms)
        params = {
            **key,
            "due": task.due_ms,
            "record": task.record,
            "priority": task.priority,
            "group": task.group,
        }
        cur = await conn.execute(Q.insert_free, params)
        if await cur.fetchone() is not None:
            return Answer("written", task.due_ms)
        # Another transaction added a pending task under the id since: judge again.
    raise StoreError(f"{task_type}/{task.id}: its task kept changing; nothing was written")


async def remember_finished(conn: Conn, qid: int, kept: Sequence[Outcome], now_ms: int) -> None:
    """Remember, in the settle's transaction, when the runs of ``kept`` outcomes marked for
    ``unique_for`` finished (done or dead), each for its window; forget those whose
    window has passed."""
    marked = {o.claim.id: now_ms + o.unique_ms for o in kept if o.unique_ms and o.op in _ENDS}
    if marked:
        await conn.execute(Q.trim_finished, {"qid": qid, "now": now_ms})
        params = {"qid": qid, "now": now_ms, "ids": list(marked), "untils": list(marked.values())}
        await conn.execute(Q.mark_finished, params)


_ENDS = ("done", "dead")
