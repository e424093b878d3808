"""Producer writes and reads of the PostgreSQL store; each takes a connection of the pool."""

from __future__ import annotations

from collections.abc import Sequence

from duetime.errors import LeaseLost, StoreRefused
from duetime.stores import wire
from duetime.stores.base import STATES, AbortFound, Claim, NewTask, State, StoredTask
from duetime.stores.postgres.config import PostgresConfig
from duetime.stores.postgres.connection import Conn
from duetime.stores.postgres.groups import give_groups
from duetime.stores.postgres.queries import Q

_LISTS = {"due": Q.list_due, "running": Q.list_running, "dead": Q.list_dead}
#: The first word of the notification that says a run of a type was marked to abort (a
#: wake-up's is a due time).
ABORT_WORD = "abort"


class Queues:
    """The queue id (qid) of each task type of one namespace, as far as the store met them.

    Queue rows are never deleted, and one is committed as soon as it is added (outside any
    transaction of the caller's), so a qid once found stays right.
    """

    def __init__(self, config: PostgresConfig) -> None:
        self.namespace = config.namespace
        self.channel = config.channel
        self._known: dict[str, int] = {}
        #: The queues known to have lanes (0008_priorities.sql: it is never cleared).
        self.laned: set[int] = set()
        #: The queues known to keep their tasks by group (0009_groups.sql: never cleared).
        self.grouped: set[int] = set()

    async def find(self, conn: Conn, task_type: str) -> int | None:
        """The type's qid, or None when it never had a task."""
        qid = self._known.get(task_type)
        if qid is None:
            cur = await conn.execute(Q.find_queue, self._names(task_type))
            row = await cur.fetchone()
            if row is None:
                return None
            qid = self._known[task_type] = int(row[0])
        return qid

    async def find_or_add(self, conn: Conn, task_type: str) -> int:
        """The type's qid, creating its queue if needed."""
        qid = self._known.get(task_type)
        while qid is None:  # no row: another connection added it after this one looked
            cur = await conn.execute(Q.add_queue, self._names(task_type))
            row = await cur.fetchone()
            if row is not None:
                qid = self._known[task_type] = int(row[0])
        return qid

    def view(self) -> Queues:
        """A copy that knows what this one knows and keeps what it finds to itself: for the
        statements of an application's transaction, which may roll back (``caller.py``)."""
        seen = Queues.__new__(Queues)
        seen.namespace, seen.channel = self.namespace, self.channel
        seen._known, seen.laned, seen.grouped = (
            dict(self._known),
            set(self.laned),
            set(self.grouped),
        )
        return seen

    def _names(self, task_type: str) -> dict[str, str]:
        return {"namespace": self.namespace, "type": task_type}


async def write(
    conn: Conn,
    queues: Queues,
    qid: int,
    task_type: str,
    tasks: Sequence[NewTask],
    only_new: bool = False,
) -> list[str]:
    """Run schedule.sql for tasks of distinct ids; the ids written."""
    params = {
        "qid": qid,
        "ids": [t.id for t in tasks],
        "dues": [t.due_ms for t in tasks],
        "records": [t.record for t in tasks],
        "priorities": [t.priority for t in tasks],
        "groups": [t.group for t in tasks],
        "only_new": only_new,
        "channel": queues.channel,
        "type": task_type,
    }
    await give_lanes(conn, queues, qid, tasks)
    await give_groups(conn, queues.grouped, qid, tasks)
    cur = await conn.execute(Q.schedule, params)
    return [row[0] for row in await cur.fetchall()]


async def give_lanes(conn: Conn, queues: Queues, qid: int, tasks: Sequence[NewTask]) -> None:
    """Before ``tasks`` are written: give the queue lanes if one of them has a priority other
    than 0 and it has none (0008_priorities.sql), in a transaction of its own (a savepoint
    inside the caller's) that holds writes of tasks off meanwhile, once a queue."""
    if qid in queues.laned or not any(t.priority for t in tasks):
        return
    async with conn.transaction():
        cur = await conn.execute(Q.read_lanes, {"qid": qid})
        row = await cur.fetchone()
        if row is not None and not row[0]:
            await conn.execute(Q.lock_tasks)
            cur = await conn.execute(Q.mark_lanes, {"qid": qid})
            if await cur.fetchone() is not None:
                await conn.execute(Q.lanes_on, {"qid": qid})
    queues.laned.add(qid)


async def wakes_for(conn: Conn, qid: int, due_ms: int) -> bool:
    """Whether a task of queue ``qid`` made due at ``due_ms`` must wake workers: it comes
    before every task due, or the earliest of those is due already (a claim running for it
    may not see the new task, and would then sleep past it)."""
    cur = await conn.execute(Q.head_due, {"qid": qid})
    row = await cur.fetchone()
    head, now = (None, 0) if row is None else row
    return head is None or due_ms < head or head <= now


async def wake(conn: Conn, queues: Queues, task_type: str, due_ms: int) -> None:
    """Tell listeners that a task of the type is due at ``due_ms`` (at commit)."""
    await conn.execute(Q.wake, {"channel": queues.channel, "payload": f"{due_ms} {task_type}"})


async def schedule(
    conn: Conn,
    queues: Queues,
    task_type: str,
    tasks: Sequence[NewTask],
    only_new: bool,
    fence: int | None = None,
) -> list[str]:
    """Write tasks (ids distinct); with ``only_new``, the ids another task holds. With
    ``fence``, raises LeaseLost (nothing written) when the queue's fence is above it."""
    qid = await queues.find_or_add(conn, task_type)
    await give_lanes(conn, queues, qid, tasks)  # before the transaction below, if any
    await give_groups(conn, queues.grouped, qid, tasks)
    if not only_new and fence is None:
        await write(conn, queues, qid, task_type, tasks)
        return []
    async with conn.transaction():
        if fence is not None:
            cur = await conn.execute(Q.read_fence, {"qid": qid})
            row = await cur.fetchone()
            if row is not None and row[0] > fence:
                raise LeaseLost(task_type, fence, f"the type's fence is at {row[0]}")
        if not only_new:
            await write(conn, queues, qid, task_type, tasks)
            return []
        written = set(await write(conn, queues, qid, task_type, tasks, only_new=True))
        left = [t for t in tasks if t.id not in written]
        if not left:
            return []
        cur = await conn.execute(Q.records, {"qid": qid, "ids": [t.id for t in left]})
        held = dict(await cur.fetchall())
    return [t.id for t in left if held.get(t.id) != t.record]


async def raise_fence(conn: Conn, queues: Queues, task_type: str, token: int) -> bool:
    """Raise the queue's fence to ``token`` unless it is above it; whether it was not."""
    qid = await queues.find_or_add(conn, task_type)
    cur = await conn.execute(Q.raise_fence, {"qid": qid, "token": token})
    return await cur.fetchone() is not None


async def put_entry(
    conn: Conn,
    queues: Queues,
    task_type: str,
    entries: Sequence[NewTask],
    keep_ttl: bool,
    now_ms: int,
) -> list[int]:
    """Write expiring entries (see ``Store.put_entry``); their due times."""
    qid = await queues.find_or_add(conn, task_type)
    dues = []
    async with conn.transaction():
        for entry in entries:
            cur = await conn.execute(Q.lock_task, {"qid": qid, "id": entry.id})
            row = await cur.fetchone()
            current, held = (None, None) if row is None else row
            due = entry.due_ms
            if current is not None and current > now_ms:  # live
                if keep_ttl:
                    due = current
            elif current is not None:  # expired, not claimed yet: its expiry is still handled
                aside = NewTask(f"{entry.id}@{current}", current, held or entry.record)
                await write(conn, queues, qid, task_type, [aside])
            await write(conn, queues, qid, task_type, [entry._replace(due_ms=due)])
            dues.append(due)
    return dues


async def remove_entry(
    conn: Conn, queues: Queues, task_type: str, task_id: str, now_ms: int
) -> bool:
    """Remove a live expiring entry (due after ``now_ms``); whether it was one."""
    qid = await queues.find(conn, task_type)
    if qid is None:
        return False
    cur = await conn.execute(Q.remove_entry, {"qid": qid, "id": task_id, "now": now_ms})
    row = await cur.fetchone()
    return bool(row and row[0])


async def cancel(conn: Conn, queues: Queues, task_type: str, task_id: str) -> bool:
    """Remove a task whatever its state; whether it existed."""
    qid = await queues.find(conn, task_type)
    if qid is None:
        return False
    cur = await conn.execute(Q.cancel, {"qid": qid, "id": task_id})
    row = await cur.fetchone()
    return bool(row and row[0])


async def abort(conn: Conn, queues: Queues, task_type: str, task_id: str) -> AbortFound:
    """Mark the run holding a task's lease to abort, or cancel a task no run holds (see
    ``Store.abort``); the abort signal goes out at commit."""
    qid = await queues.find(conn, task_type)
    if qid is None:
        return "missing"
    async with conn.transaction():
        cur = await conn.execute(Q.abort_mark, {"qid": qid, "id": task_id})
        if await cur.fetchone() is not None:
            payload = f"{ABORT_WORD} {task_type}"
            await conn.execute(Q.wake, {"channel": queues.channel, "payload": payload})
            return "running"
        cur = await conn.execute(Q.cancel, {"qid": qid, "id": task_id})
        row = await cur.fetchone()
    return "cancelled" if row and row[0] else "missing"


async def aborting(
    conn: Conn, queues: Queues, task_type: str, claims: Sequence[Claim]
) -> list[Claim]:
    """The claims whose run is marked to abort (see ``Store.aborting``)."""
    qid = await queues.find(conn, task_type)
    if qid is None:
        return []
    cur = await conn.execute(Q.aborting, {"qid": qid})
    marked = {(task_id, token) for task_id, token in await cur.fetchall()}
    return [claim for claim in claims if (claim.id, claim.token) in marked]


async def revive(
    conn: Conn, queues: Queues, task_type: str, task_id: str, due_ms: int, record: str | None
) -> bool:
    """Move a dead task back to due, with ``record`` if given; whether it was dead.

    Raises:
        StoreRefused: the dead letter has no record to run (nothing is written).
    """
    qid = await queues.find(conn, task_type)
    if qid is None:
        return False
    key = {"qid": qid, "id": task_id}
    async with conn.transaction():
        wakes = await wakes_for(conn, qid, due_ms)
        cur = await conn.execute(Q.revive, {**key, "due": due_ms, "record": record})
        if await cur.fetchone() is not None:
            if wakes:
                await wake(conn, queues, task_type, due_ms)
            return True
        cur = await conn.execute(Q.is_dead, key)
        if await cur.fetchone() is not None:
            raise StoreRefused("bad arguments: the dead task has no record to run")
    return False


async def hasten(
    conn: Conn, queues: Queues, task_type: str, task_id: str, due_ms: int
) -> bool | None:
    """Bring a waiting task forward to ``due_ms`` (see ``Store.hasten``)."""
    qid = await queues.find(conn, task_type)
    if qid is None:
        return None
    key = {"qid": qid, "id": task_id}
    async with conn.transaction():
        wakes = await wakes_for(conn, qid, due_ms)
        cur = await conn.execute(Q.hasten, {**key, "due": due_ms})
        if await cur.fetchone() is not None:
            if wakes:
                await wake(conn, queues, task_type, due_ms)
            return True
        cur = await conn.execute(Q.get, key)
        row = await cur.fetchone()
    waits = row is not None and row[1] is not None and row[2] is None
    return False if waits else None


async def get(conn: Conn, queues: Queues, task_type: str, task_id: str) -> StoredTask | None:
    """The task with this id: due if due (even while a run holds a lease), else running,
    else dead; None when it is none of them."""
    qid = await queues.find(conn, task_type)
    if qid is None:
        return None
    cur = await conn.execute(Q.get, {"qid": qid, "id": task_id})
    row = await cur.fetchone()
    if row is None:
        return None
    found = wire.stored_row(row[:10])
    return found if found is None or row[10] is None else found._replace(group=row[10])


async def list_tasks(
    conn: Conn, queues: Queues, task_type: str, state: State, limit: int, offset: int
) -> list[StoredTask]:
    """Tasks in one state, by score (then id)."""
    qid = await queues.find(conn, task_type)
    if qid is None:
        return []
    params = {"qid": qid, "limit": limit, "offset": offset}
    cur = await conn.execute(_LISTS[state], params)
    rows = await cur.fetchall()
    return [
        StoredTask(r[0], state, r[1], r[2], r[3], r[4], r[5], r[6] or 0, r[7] or "") for r in rows
    ]


async def count(conn: Conn, queues: Queues, task_type: str) -> dict[State, int]:
    """How many tasks are in each state."""
    qid = await queues.find(conn, task_type)
    if qid is None:
        return dict.fromkeys(STATES, 0)
    cur = await conn.execute(Q.count_states, {"qid": qid})
    row = await cur.fetchone()
    assert row is not None
    return dict(zip(STATES, (int(n) for n in row), strict=True))


async def active_ids(conn: Conn, queues: Queues, task_type: str, limit: int) -> list[str]:
    """The ids of running, then waiting, tasks of a type: at most ``limit``."""
    qid = await queues.find(conn, task_type)
    if qid is None:
        return []
    cur = await conn.execute(Q.active_ids, {"qid": qid, "limit": limit})
    return [row[0] for row in await cur.fetchall()]


async def add_schedule_name(conn: Conn, namespace: str, name: str, task_type: str) -> str:
    """Give a cron schedule name to a task type unless taken; the type it belongs to."""
    while True:  # no row: the name was added and removed by others meanwhile
        cur = await conn.execute(
            Q.add_schedule_name, {"namespace": namespace, "name": name, "type": task_type}
        )
        row = await cur.fetchone()
        if row is not None:
            return str(row[0])


async def remove_schedule_name(conn: Conn, namespace: str, name: str) -> None:
    """Forget a cron schedule name."""
    await conn.execute(Q.remove_schedule_name, {"namespace": namespace, "name": name})


async def schedule_names(conn: Conn, namespace: str) -> dict[str, str]:
    """Every cron schedule name of the namespace, with its task type."""
    cur = await conn.execute(Q.schedule_names, {"namespace": namespace})
    return {str(name): str(owner) for name, owner in await cur.fetchall()}
