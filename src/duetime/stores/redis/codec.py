"""How the Redis store's scripts take their arguments."""

from __future__ import annotations

from typing import Any

from duetime.stores import wire
from duetime.stores.base import Outcome, RunLog, RunNote, StoredRun, StoredTask
from duetime.stores.redis.keys import parse_lease
from duetime.stores.wire import stored_task

#: Most tasks written by one script call. Lua's unpack() has a limit of about 8,000
#: values, and a short script keeps the server responsive for other clients.
SCHEDULE_CHUNK = 1000


def log_args(record: RunLog) -> tuple[Any, ...]:
    """The settle script's ``log`` op, or the claim script's last arguments (the worker, the
    most runs kept, their most age)."""
    return (record.worker, record.keep, record.max_age_ms)


def ran_args(n: RunNote) -> tuple[Any, ...]:
    """The settle script's ``ran`` op: the run of the outcome before it."""
    started = n.started_ms or ""
    return ("ran", started, n.finished_ms, n.attempt, n.occurrence_ms, n.outcome, n.error, n.trace)


def ran_line(o: Outcome) -> str:
    """One line of the settle script's ``ran*`` op: a plain completion and its run."""
    c, n = o.claim, o.note
    assert n is not None
    return f"{c.token}|{n.started_ms or ''}|{n.finished_ms}|{n.attempt}|{n.occurrence_ms}|{c.id}"


def settle_args(o: Outcome, recorded: bool = False) -> tuple[Any, ...]:
    """The settle script's arguments for one outcome (see settle.lua), with its run when
    ``recorded`` (the call has a ``log``) and the outcome carries one."""
    c = o.claim
    if o.op == "done":
        args: tuple[Any, ...] = ("done", c.id, c.token)
    elif o.op == "release":
        args = ("release", c.id, c.token, o.due_ms)
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
    if recorded and o.note is not None:
        args += ran_args(o.note)
    return args


def stored_run(entry_id: bytes, fields: dict[bytes, bytes]) -> StoredRun:
    """A run of the history stream, from its id and fields (see the preamble)."""
    finished = wire.ms(entry_id.split(b"-", 1)[0])
    took = fields.get(b"d") or b""
    return StoredRun(
        task_id=wire.text(fields.get(b"i", b"")),
        occurrence_ms=wire.ms(fields.get(b"o", b"0")),
        attempt=wire.count(fields.get(b"a")),
        started_ms=finished - wire.ms(took) if took else None,
        finished_ms=finished,
        outcome=wire.text(fields.get(b"r", b"")),
        error=wire.text(fields[b"e"]) if fields.get(b"e") else None,
        trace=wire.text(fields[b"t"]) if fields.get(b"t") else None,
        worker=wire.text(fields[b"w"]) if fields.get(b"w") else None,
    )


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
