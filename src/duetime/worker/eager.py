"""Starting a claim's runs: one asyncio task for the runs due now, each run begun in it
until one waits.

An asyncio task per run was the largest cost a no-op handler paid (making the task,
registering it, scheduling its first step). Most handlers of a busy worker either finish
without waiting or wait once; so the runs that one claim brought are begun by one task,
which runs each of them in turn, as its own asyncio task would have, until a run waits
(awaits something that is not ready). That run keeps the task (its handler saw it as its
current task, so a timeout or a cancellation scope it entered belongs to it), and the
runs after it go on in a new task, at once. Each run is begun in its own copy of the
claiming task's context variables, and goes on in it, as in a task of its own.

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

#: Begins a run: None once it finished, else the coroutine that goes on with it (not
#: started yet). The runner's ``begin``.
Begin = Callable[[Run], Coroutine[Any, Any, None] | None]
#: Hands back a run that was claimed but never begun (its batch was cancelled first).
HandBack = Callable[[Run], None]


class Starter:
    """Begins runs in batches for one runner, and knows the tasks still at it.

    Args:
        begin: begins one run (its outcome handed on when it finishes).
        hand_back: ends a run that its batch did not begin.
    """

    def __init__(self, begin: Begin, hand_back: HandBack) -> None:
        self._begin = begin
        self._hand_back = hand_back
        #: The tasks still running batches (a run that waits keeps its batch's task).
        self.tasks: set[asyncio.Task[None]] = set()

    def start(self, loop: asyncio.AbstractEventLoop, runs: Sequence[Run]) -> None:
        """Begin ``runs`` in one new task, from its first step on (the next turn of the loop)."""
        batch = _Batch(runs)
        task = loop.create_task(self._run(batch))
        self.tasks.add(task)
        task.add_done_callback(functools.partial(self._ended, batch))

    def _ended(self, batch: _Batch, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        # Cancelled before it began them (a stop that cuts runs short): hand them back.
        for run in batch.runs[batch.next :]:
            self._hand_back(run)
        batch.next = len(batch.runs)

    async def _run(self, batch: _Batch) -> None:
        runs = batch.runs
        begin, copy = self._begin, contextvars.copy_context
        while batch.next < len(runs):
            run = runs[batch.next]
            batch.next += 1
            context = copy()
            try:
                rest = context.run(begin, run)
                if rest is None:
                    continue  # it finished
                waiting = context.run(rest.send, None)
            except StopIteration:
                continue
            except asyncio.CancelledError:
                continue  # its handler raised it; the run ended (handed back) all the same
            # It waits: it keeps this task, and the rest go on in another, now.
            run.task = asyncio.current_task()
            if batch.next < len(runs):
                rest_of_batch, batch.runs = runs[batch.next :], runs[: batch.next]
                self.start(asyncio.get_running_loop(), rest_of_batch)
            await resume(rest, waiting, context)
            return


class _Batch:
    """The runs of one batch, and the first one not begun yet."""

    __slots__ = ("next", "runs")

    def __init__(self, runs: Sequence[Run]) -> None:
        self.runs = runs
        self.next = 0


@types.coroutine
def resume(
    coro: Coroutine[Any, Any, Any],
    waiting: Any,
    context: contextvars.Context | None = None,
) -> Generator[Any, Any, Any]:
    """Go on with ``coro``, which yielded ``waiting`` on its first step: what ``await``
    does from then on (each step in ``context``, when given); returns what it returns."""
    send: Callable[[Any], Any] = coro.send
    throw: Callable[[BaseException], Any] = coro.throw
    if context is not None:
        step = context.run

        def send(value: Any) -> Any:
            return step(coro.send, value)

        def throw(exc: BaseException) -> Any:
            return step(coro.throw, exc)

    while True:
        try:
            value = yield waiting
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:
            try:
                waiting = throw(exc)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                waiting = send(value)
            except StopIteration as stop:
                return stop.value
