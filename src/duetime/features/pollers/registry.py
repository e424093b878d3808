"""An app's pollers, by name, and the writing of each poller's task when it is missing."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Container, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from duetime.errors import InvalidTaskConfigurationError
from duetime.features.pollers.defaults import POLLER_LEASE as POLLER_LEASE
from duetime.model import Pacing, TaskPolicy
from duetime.stores.base import Store
from duetime.tasktype import TaskType
from duetime.triggers.poll import tick_type

if TYPE_CHECKING:
    from duetime.features.pollers.poller import Poller

log = logging.getLogger("duetime.pollers")

#: A poller's task goes to the dead letters only after this many expired leases in a row
#: (workers that died or hung in its calls): never, in practice. A poller must go on.
POLLER_MAX_STALLS = 1_000_000


class Pollers:
    """The pollers registered on an app, by name."""

    def __init__(self) -> None:
        self.by_name: dict[str, Poller] = {}
        #: Workers of this app running now: pollers are registered before the first starts.
        self.workers_running = 0

    def check_open(self, name: str) -> None:
        """Raise unless pollers may still be registered: no worker of the app runs yet."""
        if self.workers_running:
            raise InvalidTaskConfigurationError(
                name, "poller", "cannot be registered once a worker runs"
            )

    def add(self, poller: Poller) -> None:
        self.check_open(poller.name)
        self.by_name[poller.name] = poller

    def expand(self, names: Sequence[str]) -> list[str]:
        """``names`` of task types for a worker to run, where a poller's name also brings
        the type of its calls (and stands for it alone when the poller has no handler)."""
        out = []
        for name in names:
            poller = self.by_name.get(name)
            if poller is None or poller.handler_type is not None:
                out.append(name)
            if poller is not None:
                out.append(tick_type(name))
        return list(dict.fromkeys(out))

    def of(self, types: Container[str]) -> list[Poller]:
        """The pollers whose calls a worker running ``types`` makes."""
        return [p for p in self.by_name.values() if tick_type(p.name) in types]

    async def write_missing(self, store: Store, pollers: list[Poller], now_ms: int) -> None:
        """Write the task of each poller that has none in the store (the first worker to
        start does; the others find it), and bring back one found in the dead letters."""
        for poller in pollers:
            name, first = tick_type(poller.name), poller.first_tick(now_ms)
            await store.schedule(name, [first], only_new=True)
            if await store.revive(name, poller.name, now_ms, first.record):
                log.warning("%s: its task was in the dead letters; revived", poller.name)


def poller_type(poller: Poller, scheduler: Callable[..., Awaitable[datetime]]) -> TaskType:
    """The task type of ``poller``'s calls: one at a time, never retried (a failed call is
    followed by the next), its handler :meth:`Poller.poll`."""
    policy = TaskPolicy.from_options(
        concurrency=1,
        timeout=None,
        retries=0,
        lease=timedelta(milliseconds=poller.settings.lease_ms),
        max_stalls=POLLER_MAX_STALLS,
    )
    return TaskType(
        tick_type(poller.name), poller.poll, policy, Pacing(), mode="both", scheduler=scheduler
    )
