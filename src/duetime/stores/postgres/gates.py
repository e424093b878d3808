"""A task type's gates on PostgreSQL: pause, resume and hold, each one statement on its
queue's row (the columns of ``0006_gates.sql``). Claims and settles read and write the
gates in their own statements (``claim.sql``, ``claim_gated.sql``, ``next_ms.sql``,
``settle_drop.sql``, ``settle.sql``)."""

from __future__ import annotations

from duetime.stores.postgres.connection import Conn
from duetime.stores.postgres.ops import Queues
from duetime.stores.postgres.queries import Q


async def set_paused(conn: Conn, queues: Queues, task_type: str, paused: bool) -> bool:
    """Pause or resume a type, waking its workers; whether it changed."""
    qid = await queues.find_or_add(conn, task_type)
    params = {"paused": paused, "qid": qid, "channel": queues.channel, "payload": f"0 {task_type}"}
    cur = await conn.execute(Q.set_paused, params)
    row = await cur.fetchone()
    return bool(row and row[0])


async def paused_types(conn: Conn, queues: Queues) -> list[str]:
    """The paused types of the namespace, sorted."""
    cur = await conn.execute(Q.paused_types, {"namespace": queues.namespace})
    return sorted(row[0] for row in await cur.fetchall())


async def hold(conn: Conn, queues: Queues, task_type: str, until_ms: int) -> None:
    """No claim of the type starts a task before ``until_ms``."""
    qid = await queues.find_or_add(conn, task_type)
    await conn.execute(Q.hold, {"until": until_ms, "qid": qid})
