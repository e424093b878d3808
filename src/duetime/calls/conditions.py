"""Scheduling on conditions (``if_exists="keep"`` or ``"merge"``, ``unique_for``): what the
producer asks of the store's conditional writes, and the merge into a pending payload.

The store judges each task against what its id holds, in the same atomic step as the write
(:meth:`~duetime.stores.capabilities.ConditionalSchedule.schedule_if`). A merge sends the
payload given with the task: the SQL stores deep-merge it
(:func:`~duetime.stores.merging.merged_record`) into what is pending in their write
transaction, the row locked, so a merge never meets a change and never gives up. The Redis
store instead answers with the pending record; the merge is then made here from that record
and sent again on the condition that the pending task is still the one it was made from (a
compare-and-set). A worker settling the task or another producer merging into it meanwhile
makes it answer again with what is pending now, and the merge is made again from that:
nothing is lost, nothing half-written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from duetime.calls.newtask import unique_ms
from duetime.errors import StoreError
from duetime.meta import encode_meta
from duetime.model import Task
from duetime.stores.base import NewTask
from duetime.stores.capabilities import ConditionalSchedule
from duetime.stores.conditional import Answer, Condition, Mode, Pending
from duetime.stores.merging import merged_record
from duetime.validate import dump_json

#: How many times a merge is made again because the pending task changed under it (a run
#: settled, another producer merged): each time, another write went through, so this is
#: reached only under a storm of writes to one id.
MERGE_TRIES = 50


def is_conditional(task: Task) -> bool:
    """Whether scheduling ``task`` depends on what the store holds (``if_exists`` other
    than ``"replace"``, or ``unique_for``); checked by :func:`wanted`."""
    return task.if_exists != "replace" or task.unique_for is not None


class Wanted(NamedTuple):
    """One task to write on conditions, as the producer gave it.

    Attributes:
        new: the task as it is written when its id holds no pending task.
        payload: the payload given: what a merge merges in.
        mode: ``if_exists``.
        unique_ms: ``unique_for`` in ms (0: none).
        keep_due: a merge keeps the pending task's due time (neither ``at`` nor ``delay``).
        meta_json: the metadata given (None: none; a merge then keeps the pending task's).
    """

    new: NewTask
    payload: dict[str, Any] | None
    mode: Mode
    unique_ms: int
    keep_due: bool
    meta_json: str | None = None


def wanted(task: Task, new: NewTask) -> Wanted:
    """``task``, checked at the door into ``new``, as a task to write on conditions."""
    keep_due = task.at is None and task.delay is None
    meta = encode_meta(task.meta)  # checked already, in new_task
    return Wanted(new, task.payload, task.if_exists, unique_ms(task), keep_due, meta)


def turns(tasks: Sequence[Wanted]) -> list[list[Wanted]]:
    """``tasks`` in turns that hold each id once: the first task of each id, then the
    second, and so on, so that tasks of one id are written in their order."""
    out: list[list[Wanted]] = []
    seen: dict[str, int] = {}
    for w in tasks:
        turn = seen.get(w.new.id, 0)
        seen[w.new.id] = turn + 1
        if turn == len(out):
            out.append([])
        out[turn].append(w)
    return out


async def write(
    store: ConditionalSchedule,
    task_type: str,
    tasks: Sequence[Wanted],
    now_ms: int,
    max_payload_bytes: int,
) -> list[Answer]:
    """Write tasks (ids distinct) on their conditions; per task, the store's answer
    (``written``, ``kept`` or ``recent``).

    Raises:
        ValidationError: a merged payload is over ``max_payload_bytes`` (a SQL store,
            which merges in its transaction, writes nothing of the batch; the Redis store
            nothing of that task, and the tasks merged before it in the batch are).
        SchemaError: a pending task to merge into has a record that cannot be read.
        StoreError: a merge kept meeting changes for :data:`MERGE_TRIES` sends (only a
            store that merges by compare-and-set: Redis).
    """
    conditions = [
        Condition(w.new, w.mode, w.unique_ms, keep_due=w.keep_due)
        if w.mode != "merge"
        else Condition(
            w.new,
            w.mode,
            w.unique_ms,
            keep_due=w.keep_due,
            changes=_changes(w),
            max_bytes=max_payload_bytes,
        )
        for w in tasks
    ]
    answers: list[Answer | None] = [None] * len(tasks)
    todo = list(range(len(tasks)))
    for _ in range(MERGE_TRIES):
        got = await store.schedule_if(task_type, [conditions[i] for i in todo], now_ms)
        again = []
        for i, answer in zip(todo, got, strict=True):
            if answer.verdict == "changed":
                pending, record = answer.pending, answer.record
                conditions[i] = merged(tasks[i], pending, record, max_payload_bytes)
                again.append(i)
            else:
                answers[i] = answer
        if not again:
            return [a for a in answers if a is not None]
        todo = again
    raise StoreError(
        f"{task_type}: merging into a pending task met a change {MERGE_TRIES} times; "
        "nothing more was written"
    )


def merged(w: Wanted, pending: Pending, record: str, max_payload_bytes: int) -> Condition:
    """The condition to send for ``w`` (a merge) to a store that answered ``changed``: the
    pending payload with ``w``'s deep-merged into it
    (:func:`~duetime.stores.merging.merged_record`), on the condition that it is still
    pending as it is; due as ``w`` says.
    """
    if pending == "none":  # it went: written as given, on the condition that none comes
        return Condition(w.new, "merge", w.unique_ms, keep_due=w.keep_due)
    into = merged_record(w.new.id, record, pending, _changes(w), w.unique_ms, max_payload_bytes)
    new = w.new._replace(record=into)
    return Condition(new, "merge", w.unique_ms, pending, record, w.keep_due)


def _changes(w: Wanted) -> str:
    return dump_json(w.payload or {})
