"""Starting a claim's runs: one asyncio task for the runs due now, each handler run in it
until one waits.

An asyncio task per run was the largest cost a no-op handler paid (making the task,
registering it, scheduling its first step). Most handlers of a busy worker either finish
without waiting or wait once; so the runs that one claim brought are started by one task,
which runs each of them in turn, as its own asyncio task would have, until a run waits
(awaits something that is not ready). That run keeps the task (its handler saw it as its
current task, so a timeout or a cancellation scope it entered belongs to it), and the
runs after it go on in a new task, at once. Each handler runs in its own copy of the
claiming task's context variables, as in a task of its own.

So a batch of handlers that never wait costs one task, and a batch whose every handler
waits costs one task per run, as before, and a thin layer on each of their steps.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import types
from collections.abc import Callable, Coroutine, Generator, Sequence
from typing import Any

from duetime.worker.run import Run

#: A run's whole course, as a coroutine (the runner's ``_execute``).
Execute = Callable[[Run], Coroutine[Any, Any, None]]
#: Hands back a run that was claimed but never started (its batch was cancelled first).
HandBack = Callable[[Run], None]


class Starter:
    """Starts runs in batches for one runner, and knows the tasks still at it.

    Args:
        execute: runs one run to its end (its outcome handed on).
        hand_back: ends a run that its batch did not start.
    """

    def __init__(self, execute: Execute, hand_back: HandBack) -> None:
        self._execute = execute
        self._hand_back = hand_back
        #: The tasks still running batches (a run that waits keeps its batch's task).
        self.tasks: set[asyncio.Task[None]] = set()

    def start(self, loop: asyncio.AbstractEventLoop, runs: Sequence[Run]) -> None:
        """Run ``runs`` in one new task, from its first step on (the next turn of the loop)."""
        batch = _Batch(runs)
        task = loop.create_task(self._run(batch))
        self.tasks.add(task)
        task.add_done_callback(functools.partial(self._ended, batch))

    def _ended(self, batch: _Batch, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        # Cancelled before it started them (a stop that cuts runs short): hand them back.
        for run in batch.runs[batch.next :]:
            self._hand_back(run)
        batch.next = len(batch.runs)

    async def _run(self, batch: _Batch) -> None:
        runs = batch.runs
        execute, copy = self._execute, contextvars.copy_context
        while batch.next < len(runs):
            run = runs[batch.next]
            batch.next += 1
            coro = execute(run)
            context = copy()
            try:
                waiting = context.run(coro.send, None)
            except StopIteration:
                continue
            except asyncio.CancelledError:
                continue  # its handler raised it; the run ended (handed back) all the same
            # It waits: it keeps this task, and the rest go on in another, now.
            run.task = asyncio.current_task()
            if batch.next < len(runs):
                rest, batch.runs = runs[batch.next :], runs[: batch.next]
                self.start(asyncio.get_running_loop(), rest)
            await _resume(coro, waiting, context)
            return


class _Batch:
    """The runs of one batch, and the first one not started yet."""

    __slots__ = ("next", "runs")

    def __init__(self, runs: Sequence[Run]) -> None:
        self.runs = runs
        self.next = 0


@types.coroutine
def _resume(
    coro: Coroutine[Any, Any, None], waiting: Any, context: contextvars.Context
) -> Generator[Any, Any, None]:
    """Go on with ``coro``, which yielded ``waiting`` on its first step: what ``await``
    does from then on, each step in the run's ``context``."""
    send, throw, run = coro.send, coro.throw, context.run
    while True:
        try:
            value = yield waiting
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:
            try:
                waiting = run(throw, exc)
            except StopIteration:
                return
        else:
            try:
                waiting = run(send, value)
            except StopIteration:
                return
