"""Acting on every task of a type in one state: retry all the dead letters, cancel all the
due, running or dead tasks. For the ``duetime`` command and the dashboard.

Tasks are read a page at a time (``App.list``), and each page is acted on concurrently, so
that neither the ids nor the tasks are all held at once. A page is read from where the last
one left off less the tasks acted on, which left the state: the listing may change under the
run (workers claim, tasks die, producers schedule) without a task being acted on twice.
A task that stays in the state once acted on (a running task keeps its lease when
cancelled), or that was gone when acted on, counts as left in place, which may skip a task
in this pass: a pass that acted on some tasks and skipped others is followed by another,
up to :data:`MAX_PASSES`.

A task whose id a call refuses (one another program wrote, say) does not stop the run: the
others are acted on, and :class:`~duetime.errors.BulkIncomplete` then names it. When the
store fails, no other call starts, and those in flight are awaited before the error
propagates: nothing acts behind it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime

from duetime.app import App
from duetime.clock import from_ms
from duetime.errors import BulkIncomplete, NotFound, ValidationError
from duetime.model import TaskInfo
from duetime.stores.base import STATES, State
from duetime.validate import to_ms

#: Tasks read per page: one round trip, and a page of records held at a time.
BATCH = 200
#: Calls in flight at once: enough to hide round trips, few enough to leave the store's
#: connections (each call in flight holds one) and time to the workers sharing it.
CONCURRENCY = 16
#: Passes over the listing at most: another pass runs only while the last one skipped
#: tasks, and a few are enough unless the listing churns the whole time.
MAX_PASSES = 3

#: Called after each page with (tasks acted on so far, tasks in the state at the start).
Progress = Callable[[int, int], None]
Act = Callable[[TaskInfo], Awaitable[bool]]


async def retry_all(
    app: App, task_type: str, *, at: datetime | None = None, progress: Progress | None = None
) -> int:
    """Make every dead task of ``task_type`` due again, at ``at`` or now, attempts counted
    afresh (as :meth:`App.retry`). Tasks that die during the run (after it started) are left
    in the dead letters, so that a handler that fails at once cannot keep it going.

    Returns:
        How many tasks were retried.

    Raises:
        ValidationError, UnknownTaskType: a bad type or time; nothing is changed.
        BulkIncomplete: the tasks it names could not be retried (their ids were refused);
            every other one was.
        StoreError: the store failed; the tasks retried so far stay retried, and no call
            is left running.
    """
    app.task_type(task_type)
    if at is not None:
        to_ms("at", at)  # refused here, not once per task
    started = from_ms(await app.now_ms())

    async def act(info: TaskInfo) -> bool:
        try:
            await app.retry(task_type, info.task_id, at=at)
        except NotFound:  # retried or cancelled meanwhile
            return False
        return True

    def after_start(info: TaskInfo) -> bool:
        return info.due is not None and info.due > started

    return await _sweep(app, task_type, "dead", act, after_start, progress, "retried")


async def cancel_all(
    app: App, task_type: str, state: State, *, progress: Progress | None = None
) -> int:
    """Cancel every task of ``task_type`` in ``state`` (``due``, ``running`` or ``dead``), as
    :meth:`App.cancel`: running handlers finish, but their tasks are not retried or
    rescheduled. Tasks written during the run may or may not be cancelled.

    Returns:
        How many tasks were cancelled.

    Raises:
        ValidationError, UnknownTaskType: a bad type or state; nothing is changed.
        BulkIncomplete: the tasks it names could not be cancelled (their ids were
            refused); every other one was.
        StoreError: the store failed; the tasks cancelled so far stay cancelled, and no
            call is left running.
    """
    app.task_type(task_type)
    if state not in STATES:
        raise ValidationError("state", f"must be one of {', '.join(STATES)}")

    async def act(info: TaskInfo) -> bool:
        return await app.cancel(task_type, info.task_id)

    return await _sweep(app, task_type, state, act, lambda info: False, progress, "cancelled")


async def _sweep(
    app: App,
    task_type: str,
    state: State,
    act: Act,
    stop_at: Callable[[TaskInfo], bool],
    progress: Progress | None,
    verb: str,
) -> int:
    total = (await app.counts(task_type))[state]
    done = 0
    failed: dict[str, str] = {}
    for _ in range(MAX_PASSES):
        acted, skipped = await _pass(
            app, task_type, state, _tolerant(act, failed), stop_at, done, total, progress
        )
        done += acted
        if not (acted and skipped):  # a pass that acted on none would do the same again
            break
    if failed:
        raise BulkIncomplete(verb, task_type, done, failed)
    return done


def _tolerant(act: Act, failed: dict[str, str]) -> Act:
    """``act``, but a task whose id the call refuses is noted in ``failed`` (and left in
    place) instead of failing the run."""

    async def tolerant(info: TaskInfo) -> bool:
        try:
            return await act(info)
        except ValidationError as exc:
            failed[info.task_id] = str(exc)
            return False

    return tolerant


async def _pass(
    app: App,
    task_type: str,
    state: State,
    act: Act,
    stop_at: Callable[[TaskInfo], bool],
    done: int,
    total: int,
    progress: Progress | None,
) -> tuple[int, int]:
    """One pass over the listing: (tasks acted on, tasks skipped: acted on but left in the
    state, gone, or refused)."""
    offset = acted = skipped = 0
    while True:
        page = await app.list(task_type, state, limit=BATCH, offset=offset)
        todo = [info for info in page if not stop_at(info)]
        if not todo:
            return acted, skipped
        results = await _each(act, todo)
        hits = sum(results)
        acted += hits
        # What was acted on left the listing, but for a running task cancelled (it keeps
        # its lease): those, and the tasks already gone or refused, the next page starts
        # after.
        stays = len(todo) if state == "running" else len(todo) - hits
        skipped += len(todo) - hits
        offset += stays
        if progress is not None:
            progress(done + acted, max(total, done + acted))
        if len(todo) < len(page) or len(page) < BATCH:
            return acted, skipped


async def _each(act: Act, infos: list[TaskInfo]) -> list[bool]:
    """``act`` on each task, :data:`CONCURRENCY` at a time. Once a call raises, no other
    starts, and those in flight are awaited before its error propagates: nothing acts
    behind the error. (Cancelling them instead would not be enough: a store call cut short
    may still land, from a thread or a request already sent.)"""
    limit = asyncio.Semaphore(CONCURRENCY)
    errors: list[Exception] = []

    async def one(info: TaskInfo) -> bool:
        async with limit:
            if errors:
                return False
            try:
                return await act(info)
            except Exception as exc:
                errors.append(exc)
                return False

    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(one(info)) for info in infos]
    if errors:
        raise errors[0]
    return [task.result() for task in tasks]
