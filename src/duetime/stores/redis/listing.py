"""The Redis store's listing of one type's tasks in one state (the sorted set's range, then
the records, leases and meta fields of those ids in one pipelined round trip), and its
counts."""

from __future__ import annotations

from redis.asyncio import Redis

from duetime.stores import wire
from duetime.stores.base import STATES, State, StoredTask
from duetime.stores.redis.codec import stored_task
from duetime.stores.redis.keys import TypeKeys, parse_lease


async def list_tasks(
    client: Redis, k: TypeKeys, state: State, limit: int, offset: int
) -> list[StoredTask]:
    """Tasks in ``state``, by score (see ``Store.list_tasks``); redis-py's errors pass."""
    index = {"due": k.due, "running": k.running, "dead": k.dead}[state]
    rows: list[tuple[bytes, float]] = await client.zrange(  # type: ignore[assignment]
        index, offset, offset + limit - 1, withscores=True
    )
    if not rows:
        return []
    ids = [task_id for task_id, _ in rows]  # as stored: bytes
    fields = [kind + task_id for task_id in ids for kind in (b"s:", b"e:")]
    async with client.pipeline(transaction=False) as pipe:
        pipe.hmget(k.data, ids)
        pipe.hmget(k.lease, ids)
        pipe.hmget(k.meta, fields)
        records, leases, meta = await pipe.execute()
    out = []
    for n, (task_id, score) in enumerate(rows):
        due = wire.ms(score)
        if state == "running" and leases[n]:
            due = parse_lease(wire.text(leases[n]))[1]
        stalls, error = meta[2 * n], meta[2 * n + 1]
        out.append(stored_task(wire.text(task_id), state, score, due, records[n], stalls, error))
    return out


async def count(client: Redis, k: TypeKeys) -> dict[State, int]:
    """How many tasks of the type are in each state, in one pipelined round trip."""
    async with client.pipeline(transaction=False) as pipe:
        for index in (k.due, k.running, k.dead):
            pipe.zcard(index)
        counts = await pipe.execute()
    return dict(zip(STATES, counts, strict=True))
