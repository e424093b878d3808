"""The Redis store's listing of one type's tasks in one state (the sorted set's range, then
the records, leases and meta fields of those ids in one pipelined round trip), its counts,
and the types a namespace holds."""

from __future__ import annotations

from typing import TYPE_CHECKING

from duetime.stores import wire
from duetime.stores.base import STATES, State, StoredTask
from duetime.stores.history import Newest
from duetime.stores.redis.codec import entry_runs
from duetime.stores.redis.keys import PREFIX, TypeKeys, parse_lease
from duetime.stores.runs import StoredRun
from duetime.stores.wire import stored_task

if TYPE_CHECKING:
    from redis.asyncio import Redis

#: Keys SCAN asks each server to look at per call: fewer round trips than its default 10.
SCAN_COUNT = 1000


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
        pipe.hmget(k.lane, ids)
        pipe.hmget(k.group, ids)
        records, leases, meta, lanes, groups = await pipe.execute()
    out = []
    for n, (task_id, score) in enumerate(rows):
        if state == "due":  # a score may hold microseconds: the whole ms, rounded up
            score = due = wire.due_ms(score)
        else:
            due = wire.ms(score)
        if state == "running" and leases[n]:
            due = parse_lease(wire.text(leases[n]))[1]
        stalls, error = meta[2 * n], meta[2 * n + 1]
        task = stored_task(
            wire.text(task_id), state, score, due, records[n], stalls, error, lanes[n], groups[n]
        )
        out.append(task)
    return out


#: Entries of the run history read per round trip.
RUNS_PAGE = 100


async def runs(
    client: Redis, key: str, task_id: str | None, limit: int, since_ms: int | None
) -> list[StoredRun]:
    """The newest runs of a history stream (see ``RunHistory.runs`` and the preamble of the
    scripts), read newest first in pages of RUNS_PAGE entries (``stores.history.Newest``)."""
    newest = Newest(task_id, limit, since_ms)
    high = "+"
    while True:
        entries = await _range(client, key, high, RUNS_PAGE)
        if newest.page([entry_runs(fields) for _, fields in entries]):
            return newest.found
        if len(entries) < RUNS_PAGE:
            return newest.found
        high = "(" + entries[-1][0].decode()  # the next page starts below this entry


async def _range(
    client: Redis, key: str, high: str, count: int
) -> list[tuple[bytes, dict[bytes, bytes]]]:
    entries: list[tuple[bytes, dict[bytes, bytes]]] = await client.xrevrange(  # type: ignore[assignment]
        key, high, "-", count=count
    )
    return entries


async def count(client: Redis, k: TypeKeys) -> dict[State, int]:
    """How many tasks of the type are in each state, in one pipelined round trip."""
    async with client.pipeline(transaction=False) as pipe:
        for index in (k.due, k.running, k.dead):
            pipe.zcard(index)
        counts = await pipe.execute()
    return dict(zip(STATES, counts, strict=True))


async def task_types(client: Redis, namespace: str) -> list[str]:
    """The namespace's types that hold a task: those with a due, running or dead sorted set
    (Redis deletes an empty one). SCAN visits every key of the database (of every primary,
    on a cluster), matching on the server: O(keys), for tools, not for a hot path."""
    head = f"{PREFIX}:{{{namespace}:".encode()  # names hold no glob characters
    found: set[str] = set()
    async for key in client.scan_iter(match=head + b"*}:*", count=SCAN_COUNT):
        task_type, _, kind = key[len(head) :].partition(b"}:")
        if kind in (b"due", b"running", b"dead"):
            found.add(wire.text(task_type))
    return sorted(found)
