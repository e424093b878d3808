"""How the Redis store's scripts take their arguments."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from duetime.stores import wire
from duetime.stores.base import NOTE, NewTask, Outcome, StoredTask
from duetime.stores.history import batch_run
from duetime.stores.redis.keys import parse_lease
from duetime.stores.runs import RunLog, RunNote, StoredRun
from duetime.stores.wire import stored_task

#: Most tasks written by one script call. Lua's unpack() has a limit of about 8,000
#: values, and a short script keeps the server responsive for other clients.
SCHEDULE_CHUNK = 1000


def score(task: NewTask) -> int | str:
    """A task's due time as its score in ``due``: in ms, to the microsecond (claim_due.lua
    gives back the whole ms rounded up, and the microseconds before it)."""
    lead = task.lead_us
    if not lead:
        return task.due_ms
    us = task.due_ms * 1000 - lead  # exact as text (a float is not, far from the epoch)
    sign, us = ("-", -us) if us < 0 else ("", us)
    return f"{sign}{us // 1000}.{us % 1000:03d}"


def log_args(record: RunLog) -> tuple[Any, ...]:
    """The settle script's ``log`` op, or the claim script's last arguments (the worker, the
    most runs kept, their most age)."""
    return (record.worker, record.keep, record.max_age_ms)


def ran_op(n: RunNote) -> tuple[Any, ...]:
    """The settle script's ``ran`` op: the run of the outcome before it; and after it a
    ``result`` op, when its handler returned something."""
    started = n.started_ms or ""
    ran = ("ran", started, n.finished_ms, n.attempt, n.occurrence_ms, n.outcome, n.error, n.trace)
    return ran + ("result", n.result) if n.result else ran


def settle_ops(
    chunk: Sequence[Outcome],
    recorded: bool,
    now_ms: int,
    keys: list[str],
    finished: Callable[[str], str],
) -> tuple[list[Any], list[Outcome] | None]:
    """The settle script's ops for a chunk of outcomes (see settle.lua), and the outcomes in
    the order the script answers for them (None: the chunk's own): plain completions first,
    in one argument of ``done*`` lines; with ``recorded`` (the call has a ``log``), those
    that carry a plain completion's run in ``ran*`` (their lines, and their runs as the
    history's batch entries hold them, relative to ``now_ms``: see the preamble); the rest
    one by one (an id holding a newline too), each done or dead one of a task scheduled with
    unique_for with a ``finish`` op, its finished key (``finished(id)``) added to ``keys``.
    In one pass, by index: a named tuple's fields cost a call, and this looks at every
    task."""
    plain: list[Outcome] = []
    plain_lines: list[str] = []
    ran: list[Outcome] = []
    ran_lines: list[str] = []
    ran_runs: list[str] = []
    rest: list[Outcome] = []
    to_plain, to_plain_lines, to_rest = plain.append, plain_lines.append, rest.append
    to_ran, to_ran_lines, to_ran_runs = ran.append, ran_lines.append, ran_runs.append
    for o in chunk:  # op, claim, due, record, error, dead_id, dead_record, spawn, unique_ms,
        c = o[1]  # aborted, note; c: id, token, stalls, due, record
        if o[0] != "done" or o[5] or o[7] is not None or o[8] or "\n" in c[0]:
            to_rest(o)
            continue
        n = o[NOTE]  # started, finished, attempt, occurrence, outcome, error, trace, result
        if n is None or not recorded:
            to_plain(o)
            to_plain_lines(f"{c[1]}|{c[0]}")
        elif n[4] == "done" and not n[5] and not n[6] and not n[7]:
            started, end, attempt, occurrence = n[0], n[1], n[2], n[3]
            to_ran(o)
            to_ran_lines(f"{c[1]}|{c[0]}")
            took = end - started if started else ""
            to_ran_runs(
                f"{now_ms - end}|{took}|{'' if attempt == 1 else attempt}|{now_ms - occurrence}"
            )
        else:
            to_rest(o)
    ops: list[Any] = []
    if plain:
        ops += ("done*", "\n".join(plain_lines))
    if ran:
        ops += ("ran*", "\n".join(ran_lines), "\n".join(ran_runs))
    for o in rest:
        ops += settle_args(o, recorded)
        if o[8] and o[0] in ("done", "dead"):  # remembered for unique_for
            keys.append(finished(o[1][0]))
            ops += ("finish", len(keys), o[8])
    groups = [group for group in (plain, ran, rest) if group]
    return ops, None if len(groups) == 1 else plain + ran + rest


def settle_args(o: Outcome, recorded: bool = False) -> tuple[Any, ...]:
    """The settle script's arguments for one outcome (see settle.lua), with its run when
    ``recorded`` (the call has a ``log``) and the outcome carries one."""
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
    if recorded and o.note is not None:
        args += ran_op(o.note)
    return args


def entry_runs(fields: dict[bytes, bytes]) -> tuple[int, list[StoredRun]]:
    """The runs of one entry of a history stream (see the preamble), newest first, and how
    many runs the type kept as it was written."""
    keep = wire.count(fields.get(b"k"))
    base = wire.ms(fields.get(b"f", b"0"))
    worker = wire.text(fields[b"w"]) if fields.get(b"w") else None
    batch = fields.get(b"b")
    if batch is None:
        took = fields.get(b"d") or b""
        run = StoredRun(
            task_id=wire.text(fields.get(b"i", b"")),
            occurrence_ms=wire.ms(fields.get(b"o", b"0")),
            attempt=wire.count(fields.get(b"a")),
            started_ms=base - wire.ms(took) if took else None,
            finished_ms=base,
            outcome=wire.text(fields.get(b"r", b"")),
            error=wire.text(fields[b"e"]) if fields.get(b"e") else None,
            trace=wire.text(fields[b"t"]) if fields.get(b"t") else None,
            worker=worker,
            result=wire.text(fields[b"v"]) if fields.get(b"v") else None,
        )
        return keep, [run]
    lines, done = batch.split(b"\n"), fields.get(b"h", b"").split(b"\n")
    return keep, [
        _batch_run(line, run, base, worker)
        for line, run in zip(lines[::-1], done[::-1], strict=False)
    ]


def _batch_run(line: bytes, run: bytes, base: int, worker: str | None) -> StoredRun:
    task_id = wire.text(line.partition(b"|")[2])
    return batch_run((run.split(b"|", 3) + [b""] * 4)[:4], task_id, base, worker)


def inspected(task_id: str, reply: list[Any]) -> StoredTask | None:
    """The task the inspect_task script found, or None (see inspect_task.lua)."""
    due, running, dead, record, lease, stalls, error, prio, group = (*reply, *[None] * 9)[:9]
    if due is not None:
        whole = wire.due_ms(due)
        return stored_task(task_id, "due", whole, whole, record, stalls, error, prio, group)
    if running is not None and lease is not None:
        claimed_due = parse_lease(wire.text(lease))[1]
        return stored_task(
            task_id, "running", running, claimed_due, record, stalls, error, prio, group
        )
    if dead is not None:
        return stored_task(task_id, "dead", dead, wire.ms(dead), record, stalls, error, prio, group)
    return None


def priorities(tasks: Sequence[NewTask]) -> str:
    """The priorities of ``tasks`` as the schedule scripts take them: ``""`` when all are 0
    (the common case: nothing to parse), else one a task, separated by spaces."""
    if not any(task.priority for task in tasks):
        return ""
    return " ".join(str(task.priority) for task in tasks)


def groups(tasks: Sequence[NewTask]) -> str:
    """The groups of ``tasks`` as the schedule script takes them: ``""`` when none has one
    (the common case), else each followed by a newline ("" for none; a group holds no
    control characters)."""
    if not any(task.group for task in tasks):
        return ""
    return "".join(f"{task.group}\n" for task in tasks)
