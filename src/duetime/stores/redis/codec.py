"""How the Redis store's scripts take their arguments."""

from __future__ import annotations

from typing import Any

from duetime.stores import wire
from duetime.stores.base import Outcome, StoredTask
from duetime.stores.redis.keys import parse_lease
from duetime.stores.wire import stored_task

#: Most tasks written by one script call. Lua's unpack() has a limit of about 8,000
#: values, and a short script keeps the server responsive for other clients.
SCHEDULE_CHUNK = 1000


def settle_args(o: Outcome) -> tuple[Any, ...]:
    """The settle script's arguments for one outcome (see settle.lua)."""
    c = o.claim
    if o.op == "done":
        args: tuple[Any, ...] = ("done", c.id, c.token)
    elif o.op == "release":
        args = ("release", c.id, c.token, o.due_ms)
    elif o.op == "hold":  # back to due as it was claimed, and the type held until due_ms
        args = ("hold", c.id, c.token, c.due_ms, o.due_ms)
    elif o.op == "dead":
        args = ("dead", c.id, c.token, o.record, o.error)
    elif o.op == "next":
        args = ("next", c.id, c.token, o.due_ms, o.record)
    else:
        args = ("retry", c.id, c.token, o.due_ms, o.record, o.error)
    if o.dead_id:
        args += ("file", o.dead_id, o.dead_record, o.error)
    if o.spawn is not None:
        args += ("spawn", o.spawn.id, o.spawn.due_ms, o.spawn.record)
    return args


def inspected(task_id: str, reply: list[Any]) -> StoredTask | None:
    """The task the inspect_task script found, or None (see inspect_task.lua)."""
    due, running, dead, record, lease, stalls, error = (*reply, *[None] * 7)[:7]
    if due is not None:
        return stored_task(task_id, "due", due, wire.ms(due), record, stalls, error)
    if running is not None and lease is not None:
        claimed_due = parse_lease(wire.text(lease))[1]
        return stored_task(task_id, "running", running, claimed_due, record, stalls, error)
    if dead is not None:
        return stored_task(task_id, "dead", dead, wire.ms(dead), record, stalls, error)
    return None
