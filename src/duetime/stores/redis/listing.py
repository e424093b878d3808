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
    from duetime.stores.redis.calls import RedisCalls

#: Keys SCAN asks each server to look at per call: fewer round trips than its default 10.
SCAN_COUNT = 1000


async def list_tasks(
    client: RedisCalls, k: TypeKeys, state: State, limit: int, offset: int
) -> list[StoredTask]:
    """Tasks in ``state``, by score (see ``Store.list_tasks``); the client's errors pass."""
    index = {"due": k.due, "running": k.running, "dead": k.dead}[state]
    rows = await client.zrange_withscores(index, offset, offset + limit - 1)
    if not rows:
        return []
    ids = [task_id for task_id, _ in rows]  # as stored: bytes
    fields = [kind + task_id for task_id in ids for kind in (b"s:", b"e:")]
    reads = [("HMGET", k.data, *ids), ("HMGET", k.lease, *ids), ("HMGET", k.meta, *fields)]
    reads += [("HMGET", k.lane, *ids), ("HMGET", k.group, *ids)]
    records, leases, meta, lanes, groups = await client.pipeline(reads)
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
    client: RedisCalls, key: str, task_id: str | None, limit: int, since_ms: int | None
) -> list[StoredRun]:
    """The newest runs of a history stream (see ``RunHistory.runs`` and the preamble of the
    scripts), read newest first in pages of RUNS_PAGE entries (``stores.history.Newest``)."""
    newest = Newest(task_id, limit, since_ms)
    high = "+"
    while True:
        entries = await client.xrevrange(key, high, "-", RUNS_PAGE)
        if newest.page([entry_runs(fields) for _, fields in entries]):
            return newest.found
        if len(entries) < RUNS_PAGE:
            return newest.found
        high = "(" + entries[-1][0].decode()  # the next page starts below this entry


async def count(client: RedisCalls, k: TypeKeys) -> dict[State, int]:
    """How many tasks of the type are in each state, in one pipelined round trip."""
    counts = await client.pipeline([("ZCARD", index) for index in (k.due, k.running, k.dead)])
    return dict(zip(STATES, counts, strict=True))


async def task_types(client: RedisCalls, namespace: str) -> list[str]:
    """The namespace's types that hold a task: those with a due, running or dead sorted set
    (Redis deletes an empty one). SCAN visits every key of the database (of every primary,
    on a cluster), matching on the server: O(keys), for tools, not for a hot path."""
    head = f"{PREFIX}:{{{namespace}:".encode()  # names hold no glob characters
    found: set[str] = set()
    async for key in client.scan(head + b"*}:*", SCAN_COUNT):
        task_type, _, kind = key[len(head) :].partition(b"}:")
        if kind in (b"due", b"running", b"dead"):
            found.add(wire.text(task_type))
    return sorted(found)
