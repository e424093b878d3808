"""Call deadlines without a timer per call: the calls of one second share one."""

from __future__ import annotations

import asyncio
from typing import Any


class Deadlines:
    """Cuts short the calls that run past ``seconds``.

    ``asyncio.timeout()`` sets and cancels a timer for every call, a measurable share of a
    round trip. This rounds each call's deadline up to a whole second of the loop's clock
    and keeps one timer per such second, which cancels the calls of that second still
    waiting. ``with deadlines.watch():`` around a call turns that cancellation into a
    TimeoutError, and lets any other cancellation through.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._cohorts: dict[int, set[asyncio.Task[Any]]] = {}
        self._expired: set[asyncio.Task[Any]] = set()

    def watch(self) -> _Watch:
        loop = asyncio.get_running_loop()
        second = int(loop.time() + self.seconds) + 1
        cohort = self._cohorts.get(second)
        if cohort is None:
            cohort = self._cohorts[second] = set()
            loop.call_at(second, self._expire, second)
        task = asyncio.current_task()
        assert task is not None
        cohort.add(task)
        return _Watch(self, second, task, task.cancelling())

    def _expire(self, second: int) -> None:
        for task in self._cohorts.pop(second, ()):
            self._expired.add(task)
            task.cancel()

    def _end(self, second: int, task: asyncio.Task[Any], cancelling: int) -> bool:
        """Stop watching. Whether the task was cancelled for its time and by nothing else
        since the call began (its cancellation is then taken back)."""
        cohort = self._cohorts.get(second)
        if cohort is not None:
            cohort.discard(task)
        if task not in self._expired:
            return False
        self._expired.discard(task)
        return task.uncancel() <= cancelling


class _Watch:
    __slots__ = ("_deadlines", "_second", "_task", "_cancelling")

    def __init__(
        self, deadlines: Deadlines, second: int, task: asyncio.Task[Any], cancelling: int
    ) -> None:
        self._deadlines, self._second, self._task = deadlines, second, task
        self._cancelling = cancelling

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        deadlines = self._deadlines
        ran_out = deadlines._end(self._second, self._task, self._cancelling)
        if ran_out and kind is asyncio.CancelledError:
            raise TimeoutError(f"no reply in {deadlines.seconds} s") from None
        # Otherwise the call's own outcome stands: its result, its error, or a cancellation
        # that came from elsewhere (as asyncio.timeout() does).
