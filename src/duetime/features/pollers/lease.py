"""A poller's call as its worker holds it: the lease of the poller's task, checked before the
scheduler is called and between tries of a dispatch, and the token that fences its writes.

The worker that claimed the poller's task holds the right to call, but a worker can be
paused (a long GC, a VM or a SIGSTOP) for longer than its lease: another worker then claims
the task and makes the next call, while the paused one, once it wakes, carries on with the
call it was in. So a call first renews the lease (a call whose lease was taken over is not
made) and raises its handler type's fence to its token (see ``Store.raise_fence``); every
task it then writes carries the token, and the store refuses them once a later call raised
the fence. Two types' keys may live apart (Redis Cluster), which is why the fence lives with
the handler's type: it is checked in the same atomic step as the write.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from duetime.errors import LeaseLost, StoreError
from duetime.stores.base import Claim, Store

log = logging.getLogger("duetime.pollers")


class CallLease:
    """The lease one call of a poller runs under.

    Args:
        open_store: the app's store, opened.
        tick_type: the task type of the poller's calls.
        task_id: the id of the poller's task (its name).
        token: the fencing token of this claim of the poller's task.
        lease_ms: the lease's length.
        now_ms: the store's time now.
        due_ms: when the poller's task was due as it was claimed.
    """

    def __init__(
        self,
        open_store: Callable[[], Awaitable[Store]],
        tick_type: str,
        task_id: str,
        token: int,
        lease_ms: int,
        now_ms: Callable[[], Awaitable[int]],
        due_ms: int,
    ) -> None:
        self._open = open_store
        self.tick_type = tick_type
        self.task_id = task_id
        self.token = token
        self.lease_ms = lease_ms
        self._now_ms = now_ms
        #: Until when the lease surely holds, as far as this call knows. A task is claimed
        #: once it is due (less the look-ahead, milliseconds), and a lease passes on only
        #: once it ran out, so at first: the due time and half the lease (the other half is
        #: room for the look-ahead and for clocks that differ). Then as a renewal left it;
        #: the worker renews the lease too, so it may hold longer.
        self.deadline_ms = due_ms + lease_ms // 2

    async def begin(self, handler_type: str | None) -> None:
        """Before anything is read for the call: check the lease holds (renewing it, unless
        the claim is so recent that it cannot have run out), and raise the fence of
        ``handler_type`` (the type the call writes its instructions to, if any) to the token.

        Raises:
            LeaseLost: another worker took the call over, or a later call began.
            StoreError: the store failed.
        """
        # A worker paused between its claim and now finds its lease taken over here.
        if await self._now_ms() >= self.deadline_ms and not await self.renew():
            raise self.lost("another worker took the poller's call over")
        store = await self._open()
        if handler_type is not None and not await store.raise_fence(handler_type, self.token):
            raise self.lost("a later call of the poller began")

    async def renew(self) -> bool:
        """Extend the lease: whether it still holds (this worker's claim has it).

        Raises:
            StoreError: the store failed.
        """
        store, now = await self._open(), await self._now_ms()
        claim = Claim(self.task_id, self.token, 0, 0, "")  # a renewal reads id and token
        if await store.extend(self.tick_type, [claim], now + self.lease_ms):
            return False
        self.deadline_ms = now + self.lease_ms
        return True

    async def holds(self) -> bool:
        """Whether the lease still holds: it was renewed now, or, when the store cannot be
        reached, :attr:`deadline_ms` has not passed (past it, another worker may have taken
        the call over)."""
        try:
            return await self.renew()
        except StoreError as exc:
            log.warning("%s: cannot renew the call's lease: %s", self.task_id, exc)
            return await self._now_ms() < self.deadline_ms

    def lost(self, detail: str) -> LeaseLost:
        """The error of a call whose lease was lost."""
        return LeaseLost(self.tick_type, self.token, detail)
