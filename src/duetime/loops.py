"""What belongs to one event loop: connections, locks and tasks are made in a loop and
cannot be used from another. An App used from successive loops (``asyncio.run`` twice, a
test suite's fresh loop per test) follows the running loop with these."""

from __future__ import annotations

import asyncio


class LoopBound:
    """The loop something was last made for; :meth:`moved` says when the running loop is
    another (it is then the one recorded)."""

    __slots__ = ("loop",)

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None

    def moved(self) -> bool:
        """Whether the running loop is not the one recorded before (False the first time,
        and outside a loop)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        if loop is self.loop:
            return False
        before, self.loop = self.loop, loop
        return before is not None


class LoopLock:
    """An :class:`asyncio.Lock` of the running loop: a lock that one loop waited on is bound
    to it, so another loop gets a new one. ``async with lock():``."""

    __slots__ = ("_lock", "_bound")

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._bound = LoopBound()

    def __call__(self) -> asyncio.Lock:
        if self._bound.moved():
            self._lock = asyncio.Lock()
        return self._lock
