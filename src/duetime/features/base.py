"""The feature seam: what a feature (cron schedules, expiring groups, pollers, key events,
telemetry, and the next ones) tells a worker, and what a worker gives it.

A feature is a package under :mod:`duetime.features` with a :class:`Feature` that an
:class:`~duetime.App` registers once (:class:`~duetime.registry.Registry`). The worker knows
none of them by name: as it is made, it asks each feature which more task types it runs
(:meth:`Feature.worker_types`); as it starts, it lets each write what it declares in the
store and hand back the :class:`~duetime.events.Listener` objects it needs
(:meth:`Feature.start`): listeners hear the worker's events, run loops of their own and
finish with it; and which of its types' runs it records with their outcomes
(:meth:`Feature.records`: the run history). A feature that needs more of a store than the
core protocol names the capabilities it needs (:mod:`duetime.stores.capabilities`), checked
when the store is known.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from duetime.clock import Clock
from duetime.events import Listener
from duetime.stores.base import Store
from duetime.stores.capabilities import Capability
from duetime.stores.runs import RunLog

#: What a worker reports of itself: handlers running by type, and when a claim last brought
#: tasks (store clock ms, or None).
Status = Callable[[], tuple[dict[str, int], int | None]]


class Connection(Protocol):
    """What a feature uses of its app's client: the store, opened on first use, and the
    store's time."""

    @property
    def max_payload_bytes(self) -> int: ...

    async def open(self) -> Store: ...

    async def now_ms(self) -> int: ...


class WorkerRun(NamedTuple):
    """What a worker gives the features as it starts.

    Attributes:
        store: the app's store, open.
        clock: the store's clock.
        types: the task types this worker runs (its handlers').
        namespace: the app's namespace.
        worker_id: this worker's id (``host-pid-random``), unique among live workers.
        status: what the worker reports of itself now (see :data:`Status`).
        monitored: whether the worker keeps records for watchers (heartbeat, counts).
    """

    store: Store
    clock: Clock
    types: tuple[str, ...]
    namespace: str
    worker_id: str
    status: Status
    monitored: bool = True


class Feature:
    """A feature of an app, as workers see it; every hook does nothing by default."""

    def needs(self) -> Sequence[tuple[Capability[Any], str]]:
        """The store capabilities the feature cannot work without now, each with what needs
        it (for the error): checked when the app's store is known, and when it opens."""
        return ()

    def check(self, store: object, where: str) -> None:
        """Refuse ``store`` (the store object, not opened; ``where``: its URL for messages)
        for a reason of the feature's own, beyond :meth:`needs`, raising ConfigError."""

    def worker_types(self, names: Sequence[str]) -> list[str]:
        """The task types a worker running ``names`` also runs for this feature (a
        poller's calls, say), and those of ``names`` it runs in their place; the default
        is ``names`` as they are."""
        return list(names)

    async def start(self, run: WorkerRun) -> Sequence[Listener]:
        """Write what the feature declares for ``run.types`` to the store, and return the
        listeners the worker adds for it (none by default)."""
        return ()

    def bound(self, connection: Connection) -> Feature:
        """This feature as another client of the app uses it (a detached copy on a store
        object of its own, in another event loop): the same declarations on
        ``connection``. The feature itself unless it keeps a connection."""
        return self

    def records(self, run: WorkerRun) -> Mapping[str, RunLog]:
        """The task types of ``run.types`` whose runs the worker records in the store's run
        history (:data:`~duetime.stores.capabilities.RUN_HISTORY`, which the feature then
        needs) as it settles them, each with where and for how long; none by default.
        Asked once, as the worker starts."""
        return {}
