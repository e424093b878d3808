"""Writes on conditions (``if_exists``, ``unique_for``): the values a store of the
:data:`~duetime.stores.capabilities.CONDITIONAL` capability takes and answers.

A task is *pending* while it waits (due) or runs (holds a lease) and has a record; a dead
letter is not pending. A store with the capability also remembers, per (type, id), when a
run of a task scheduled with ``unique_for`` finished (done or dead): the settle of that run
carries the window (``Outcome.unique_ms``), and the memory lapses after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

from duetime.errors import StoreRefused
from duetime.stores.base import NewTask

#: What a write does when the id holds a pending task: ``replace`` it (a new occurrence, as
#: :meth:`~duetime.stores.base.Store.schedule` writes), ``keep`` it as it is, or ``merge``:
#: write the record the caller made from the pending one (see :class:`Condition`).
Mode = Literal["replace", "keep", "merge"]
MODES: tuple[Mode, ...] = ("replace", "keep", "merge")

#: What is pending under an id: nothing, a task that waits (it may also run: rescheduled
#: while it ran), or a task that only runs.
Pending = Literal["none", "waits", "runs"]

Verdict = Literal["written", "kept", "recent", "changed"]


class Condition(NamedTuple):
    """One task to write on conditions.

    Attributes:
        task: the task, as written when the conditions let it be.
        mode: see :data:`Mode`. With ``merge``, ``task.record`` was made from what the
            caller found pending (``expected``); the write is made only while that is still
            what is pending, and answered ``changed`` otherwise.
        unique_ms: over 0: nothing is written while a run of the id finished less than this
            many ms before the call's ``now_ms``.
        pending: ``merge``: what the caller found pending when it made ``task.record``.
        expected: ``merge``: the pending task's record then ("" when none was pending).
        keep_due: ``merge``: a task that waits keeps its due time (else it moves to
            ``task.due_ms``).
        changes: ``merge``: the JSON text of the payload to merge in ("" for none). A store
            that merges in its own atomic step (the SQL stores) merges it into what is
            pending then (:func:`~duetime.stores.merging.merged_record`) and never answers
            ``changed``; one that does not ignores it.
        max_bytes: ``merge`` with ``changes``: the most bytes the merged payload may hold.
    """

    task: NewTask
    mode: Mode = "replace"
    unique_ms: int = 0
    pending: Pending = "none"
    expected: str = ""
    keep_due: bool = False
    changes: str = ""
    max_bytes: int = 0


class Answer(NamedTuple):
    """What became of one :class:`Condition`.

    Attributes:
        verdict: ``written`` (or merged); ``kept`` (``keep``: a task is pending); ``recent``
            (a run finished within ``unique_ms``); ``changed`` (``merge``: what is pending
            is not what the caller found: nothing was written, and ``pending`` and
            ``record`` say what is pending now).
        due_ms: ``written``: its due time; ``kept``: the pending task's (of its run, when
            it only runs).
        pending: ``changed``: what is pending now.
        record: ``changed``: the pending task's record ("" when none).
    """

    verdict: Verdict
    due_ms: int | None = None
    pending: Pending = "none"
    record: str = ""


def check_conditions(tasks: Sequence[Condition]) -> None:
    """Refuse, before any write, what a SQL store would take but no caller of duetime's
    sends (the Redis store's script checks the same): an empty id or record, an unknown
    mode, a negative window, an id given twice.

    Raises:
        StoreRefused: naming the task.
    """
    for n, c in enumerate(tasks):
        if not c.task.id or not c.task.record or c.mode not in MODES or c.unique_ms < 0:
            raise StoreRefused(f"bad arguments: task {n} of a conditional write")
    if len({c.task.id for c in tasks}) != len(tasks):
        raise StoreRefused("bad arguments: an id given twice in a conditional write")


def in_store(c: Condition, pending: Pending, record: str) -> Condition:
    """``c``, a merge with ``changes``, made against what is pending now (``pending``, its
    ``record``), by a store that holds the id still until its write ends: the condition
    that is then met (see :func:`~duetime.stores.merging.merged_record`).

    Raises:
        SchemaError: the pending record cannot be read.
        ValidationError: the merged payload is over ``c.max_bytes``.
    """
    if pending == "none":
        return c._replace(pending="none", expected="", changes="")
    from duetime.stores.merging import merged_record  # a merge's, imported by the first

    task = c.task
    into = merged_record(task.id, record, pending, c.changes, c.unique_ms, c.max_bytes)
    return c._replace(task=task._replace(record=into), pending=pending, expected=record)
