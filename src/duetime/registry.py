"""The registry an App owns: its task types, its features (each keeping what the app
declares of it: cron schedules, expiring groups, pollers, key routes) and the listeners
every worker of the app gets."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, Protocol, TypeVar, Unpack

from duetime.clock import Clock
from duetime.events import Listener
from duetime.features.base import Connection, Feature, WorkerRun
from duetime.middleware import Middleware, MiddlewareLike
from duetime.model import Task, TaskOptions
from duetime.stores.base import Store
from duetime.stores.capabilities import require
from duetime.stores.runs import RunLog
from duetime.tasktype import Handler, TaskType, TaskTypes

F = TypeVar("F", bound=Feature)


class KnownStore(Protocol):
    """A client whose store may be known before it opens."""

    def store_known(self) -> bool: ...

    def store(self) -> object: ...

    def where(self) -> str: ...


class Registry:
    """What an app declares, in one place; workers are made from it.

    Args:
        types: the app's task types (registered with handlers, or declared).
    """

    def __init__(self, types: TaskTypes) -> None:
        self.types = types
        #: Listeners every worker of the app gets, before its own.
        self.listeners: list[Listener] = []
        #: The middleware around every handler of the app's workers, outermost first.
        self.middleware: tuple[MiddlewareLike, ...] = ()
        #: What the app's middleware adds to each task's metadata as it is scheduled
        #: (``Middleware.producing``; tracing's context, say), in the middleware's order.
        self.producing: tuple[Callable[[dict[str, Any] | None], dict[str, Any] | None], ...] = ()
        self._features: dict[type[Feature], Feature] = {}

    def add(self, feature: F) -> F:
        """Register ``feature`` (one of each kind); returns it."""
        kind = type(feature)
        if kind in self._features:
            raise ValueError(f"a {kind.__name__} is registered already")
        self._features[kind] = feature
        return feature

    def get(self, kind: type[F]) -> F:
        """The registered feature of class ``kind``.

        Raises:
            LookupError: none is registered.
        """
        feature = self._features.get(kind)
        if feature is None:
            raise LookupError(f"no {kind.__name__} is registered")
        assert isinstance(feature, kind)
        return feature

    def __iter__(self) -> Iterator[Feature]:
        """The features, in the order they were registered."""
        return iter(self._features.values())

    def bound(self, connection: Connection) -> Registry:
        """This registry for a detached copy of the app on ``connection``: the same task
        types, listeners and declarations, each feature bound to the copy's store."""
        other = Registry(self.types)
        other.listeners = self.listeners
        other.middleware = self.middleware
        other.producing = self.producing
        other._features = {kind: f.bound(connection) for kind, f in self._features.items()}
        return other

    def use_middleware(self, middleware: tuple[MiddlewareLike, ...]) -> None:
        """Wrap every handler of the app's workers in ``middleware`` (checked), and let
        those that add to a task's metadata as it is scheduled do so."""
        self.middleware = middleware
        self.producing = tuple(
            m.producing
            for m in middleware
            if isinstance(m, Middleware) and type(m).producing is not Middleware.producing
        )

    def stamped(self, task: Task) -> Task:
        """``task`` with what the middleware adds to its metadata (itself without any)."""
        if not self.producing:
            return task
        meta = task.meta
        for hook in self.producing:
            meta = hook(meta)
        return replace(task, meta=meta)

    def records(self, run: WorkerRun) -> dict[str, RunLog]:
        """The task types of ``run`` whose runs its settles record in the run history, with
        where and for how long: what the features say (``Feature.records``)."""
        found: dict[str, RunLog] = {}
        for feature in self:
            found.update(feature.records(run))
        return found

    def check_now(self, client: KnownStore) -> None:
        """:meth:`check_store` now, if ``client``'s store is settled already (given, or
        named by a URL); else it is checked when the store opens."""
        if client.store_known():
            self.check_store(client.store(), client.where())

    def check_store(self, store: object, where: str) -> None:
        """Refuse ``store`` (the store object, not opened) unless it has every capability
        the registered features need now.

        Raises:
            ConfigError: naming the feature, the store and the capability it lacks.
        """
        for feature in self:
            for capability, who in feature.needs():
                require(store, capability, who, where)
            feature.check(store, where)


class ClientSide(Protocol):
    """What the calls a feature adds to a client (its mixin), and the producer's calls, use
    of it: the registry, the store and its time."""

    @property
    def registry(self) -> Registry: ...

    @property
    def types(self) -> TaskTypes: ...

    @property
    def max_payload_bytes(self) -> int: ...

    async def open(self) -> Store: ...

    async def now_ms(self) -> int: ...

    @property
    def clock(self) -> Clock: ...

    def store(self) -> Store: ...

    def store_known(self) -> bool: ...

    def where(self) -> str: ...

    def task_type(self, name: object) -> TaskType: ...


class AppSide(ClientSide, Protocol):
    """What the decorators a feature adds to the App use of it: the client's side, and the
    task decorator."""

    def task(self, name: str, **options: Unpack[TaskOptions]) -> Callable[[Handler], TaskType]: ...
