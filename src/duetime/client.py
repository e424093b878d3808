"""The Client: the store behind an app, its clock, and the calls on tasks (schedule, read,
cancel, retry; the producer's calls are in :mod:`duetime.calls.producing`)."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator
from datetime import datetime
from typing import TYPE_CHECKING, Self, TypedDict

from duetime.calls.aborts import AbortCalls
from duetime.calls.listing import task_info
from duetime.calls.producing import ProducerCalls, opened
from duetime.calls.upcoming import UpcomingCalls
from duetime.clock import Clock, StoreClock, from_ms, synced_clock
from duetime.errors import (
    DuetimeError,
    SchemaError,
    TaskNotFound,
    ValidationError,
)
from duetime.features.cron.calls import CronCalls
from duetime.features.cron.feature import CronFeature
from duetime.loops import LoopLock
from duetime.model import TaskInfo
from duetime.partitions.store import open_partitioned
from duetime.record import Record
from duetime.registry import Registry
from duetime.stores import check_scheme, open_store, redact, resolve_url
from duetime.stores.base import DURABILITIES, STATES, Durability, State, Store
from duetime.tasktype import TaskType, TaskTypes
from duetime.validate import DEFAULT_MAX_PAYLOAD_BYTES, check_id, check_int, check_name, to_ms

if TYPE_CHECKING:
    from duetime.stores.redis.resp.credentials import Credentials

#: The most tasks one listing returns, and the furthest it may start.
MAX_LIST = 1_000_000
MAX_OFFSET = 2**53


class ClientSettings(TypedDict, total=False):
    """The settings of a :class:`Client` (and an :class:`~duetime.App`) beside its URL."""

    namespace: str
    clock: Clock | None
    max_payload_bytes: int
    allow_eviction: bool
    durability: Durability
    store: Store | None
    redis_credentials: Credentials | None


class Client(ProducerCalls, CronCalls, UpcomingCalls, AbortCalls):
    """A store, its clock, what it may schedule (its registry: declared task types and cron
    schedules) and the calls on its tasks (their coming runs: :class:`UpcomingCalls`) and
    cron schedules; :class:`~duetime.App` adds handlers, the features that run them and
    workers. The arguments are :class:`~duetime.App`'s.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        namespace: str = "default",
        clock: Clock | None = None,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
        allow_eviction: bool = False,
        durability: Durability = "local",
        store: Store | None = None,
        redis_credentials: Credentials | None = None,
    ) -> None:
        if durability not in DURABILITIES:
            raise ValidationError("durability", f"must be one of {', '.join(DURABILITIES)}")
        self.durability: Durability = durability
        self.namespace = check_name("namespace", namespace)
        if not isinstance(max_payload_bytes, int) or max_payload_bytes < 2:
            raise ValidationError("max_payload_bytes", "must be an integer of 2 or more")
        self.max_payload_bytes = max_payload_bytes
        self.allow_eviction = allow_eviction
        if redis_credentials is not None and not callable(redis_credentials):
            raise ValidationError("redis_credentials", "must be a callable (or None)")
        self.redis_credentials = redis_credentials
        #: The task types this client may schedule (an App registers them; a bare client
        #: declares them).
        self.types = TaskTypes(self.schedule)
        #: What the client knows: its task types and features (a bare client has cron
        #: schedules only; an App adds the rest).
        self.registry = Registry(self.types)
        self.registry.add(CronFeature(self))
        self._given_url = None if url is None else check_scheme(resolve_url(url))
        self._given_store = store
        self._given_clock = clock
        self._made: Store | None = None  # the store made from the URL, once asked for
        self._creates = True  # whether opening may create the store (a SQLite file)
        self._store: Store | None = None  # open, and spread over partitions
        self._clock: Clock | None = clock
        self._opening = LoopLock()

    # -- the store ------------------------------------------------------------------------

    def store(self) -> Store:
        """The store object: the one given, or the one the URL names, made (not opened) on
        first call, when the URL (or ``DUETIME_URL``) is read.

        Raises:
            ConfigError: the URL names no store duetime has.
        """
        if self._given_store is not None:
            return self._given_store
        if self._made is None:
            self._made = open_store(
                resolve_url(self._given_url),
                namespace=self.namespace,
                allow_eviction=self.allow_eviction,
                durability=self.durability,
                create=self._creates,
                redis_credentials=self.redis_credentials,
            )
        return self._made

    def open_existing(self) -> None:
        """Open only a store that exists: a SQLite file named by the URL that does not
        exist makes :meth:`open` fail with a ConfigError naming its path, instead of
        creating an empty database. For reads (the CLI's and the dashboard's): a typo in a
        path must not leave a new file behind. A store object given is not changed.
        """
        self._creates = False
        if self._store is None and self._made is not None:
            self._made = None
            self.store()  # made again, not to create

    @property
    def url(self) -> str:
        """The store's URL (the given store's own, or the one given or found)."""
        return self.store().url

    def store_known(self) -> bool:
        """Whether the store is settled already: given, or named by a URL given or read."""
        return self._given_store is not None or self._given_url is not None or bool(self._made)

    def where(self) -> str:
        """The store's URL with any password hidden, for messages."""
        return redact(self.url)

    def declare(self, *names: str, partitions: int = 1) -> None:
        """Declare task types this process schedules but does not run.

        A producer without the handlers' code declares the types it sends, so that a typo
        in a type name still fails at ``schedule``; ``partitions`` must be the handlers'
        (``@app.task(partitions=...)``). Declaring a registered type is a no-op.
        """
        self.types.declare(names, partitions)

    def task_type(self, name: object) -> TaskType:
        """The registered or declared task type ``name``: its handler, policy and pacing.

        Raises:
            UnknownTaskType: neither registered nor declared (or not a valid name).
        """
        return self.types.find(name)

    # -- lifecycle ----------------------------------------------------------------------

    async def open(self) -> Store:
        """Open the store (once) and sync the clock; returns the store."""
        if self._store is not None:
            return self._store
        async with self._opening():
            if self._store is None:
                store = self.store()
                self._check(store)
                store = await open_partitioned(store, self.types.partitions_of)
                if self._given_clock is None:
                    self._clock = await synced_clock(store)
                self._store = store
        return self._store

    def _check(self, store: Store) -> None:
        """Refuse a store that lacks what the registered features need."""
        self.registry.check_store(store, self.where())

    async def close(self) -> None:
        """Close the store. The app can be opened again afterwards."""
        store, self._store = self._store, None
        if store is not None:
            await store.close()
        self._clock = self._given_clock

    @contextlib.asynccontextmanager
    async def using(self, store: Store, *, clock: Clock | None = None) -> AsyncIterator[Self]:
        """Work on ``store`` (a store object, not open) and ``clock`` within the block, in
        place of the client's own store and clock: for tests (``duetime.testing``).

        The client's own store is not touched (not opened, not closed); on exit, also on an
        exception, ``store`` is closed if the block opened it, and the client is as it was
        (open or not, with its own clock). Calls running elsewhere on the client meanwhile
        see the swap too.
        """
        saved = self._given_store, self._given_clock, self._made, self._store, self._clock
        opening = self._opening
        self._given_store, self._given_clock, self._clock = store, clock, clock
        self._made = self._store = None
        self._opening = LoopLock()
        try:
            yield self
        finally:
            try:
                await self.close()
            finally:
                self._given_store, self._given_clock, self._made, self._store, self._clock = saved
                self._opening = opening

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def clock(self) -> Clock:
        """The clock "now" comes from: the store's, once the app is open."""
        if self._clock is None:
            raise DuetimeError("the app is not open yet: await app.open() first")
        return self._clock

    async def now_ms(self) -> int:
        """The current time by the app's clock, in epoch milliseconds."""
        await self.open()
        clock = self.clock
        if isinstance(clock, StoreClock) and clock.stale():
            await clock.sync()
        return clock.now_ms()

    async def cancel(self, task_type: str, task_id: str, *, connection: object = None) -> bool:
        """Cancel a task, due, dead or running. Returns whether it existed.

        A running handler is not interrupted (:meth:`abort` does that), but its task will
        not be retried or rescheduled. With ``connection``, in its transaction (see
        :meth:`schedule`).
        """
        self.task_type(task_type)
        check_id(task_id, stored=True)
        return await (await opened(self, connection)).cancel(task_type, task_id)

    async def retry(self, task_type: str, task_id: str, *, at: datetime | None = None) -> datetime:
        """Run a dead task again, at ``at`` or now, with its attempts counted afresh.

        Raises:
            TaskNotFound: there is no dead task with this id.
        """
        self.task_type(task_type)
        check_id(task_id, stored=True)
        store = await self.open()
        due = to_ms("at", at) if at is not None else self.clock.now_ms()
        stored = await store.get(task_type, task_id)
        if stored is None or stored.state != "dead":
            raise TaskNotFound(task_type, task_id, "dead")
        record = None
        if stored.record is not None:
            try:
                record = Record.decode(stored.record).revived().encode()
            except SchemaError:
                pass  # kept as it is: the worker will file it as corrupt again, with the reason
        if not await store.revive(task_type, task_id, due, record):
            raise TaskNotFound(task_type, task_id, "dead")
        return from_ms(due)

    # -- reading ------------------------------------------------------------------------

    async def get(self, task_type: str, task_id: str) -> TaskInfo | None:
        """The task with this id, or None."""
        self.task_type(task_type)
        check_id(task_id, stored=True)
        stored = await (await self.open()).get(task_type, task_id)
        return None if stored is None else task_info(task_type, stored)

    async def list(
        self, task_type: str, state: State = "due", *, limit: int = 100, offset: int = 0
    ) -> list[TaskInfo]:
        """Tasks of a type in one state (``due``, ``running`` or ``dead``), earliest first:
        at most ``limit`` (1 to 1,000,000) after the first ``offset``."""
        self.task_type(task_type)
        if state not in STATES:
            raise ValidationError("state", f"must be one of {', '.join(STATES)}")
        if check_int("limit", limit) > MAX_LIST:
            raise ValidationError("limit", f"must be at most {MAX_LIST:,} (a page of tasks)")
        if check_int("offset", offset, minimum=0) > MAX_OFFSET:
            raise ValidationError("offset", f"must be at most {MAX_OFFSET:,}")
        rows = await (await self.open()).list_tasks(task_type, state, limit, offset)
        return [task_info(task_type, row) for row in rows]

    async def counts(self, task_type: str) -> dict[State, int]:
        """How many tasks of a type are due, running and dead."""
        self.task_type(task_type)
        return await (await self.open()).count(task_type)

    def detached(self) -> Self:
        """A new client (or app), not open, with this one's settings and registry, on a
        store object of its own with the same settings: for another event loop (the
        blocking client runs one in a thread of its own)."""
        other = copy.copy(self)
        other._given_store = self.store().copy()
        other._made = None
        other._store = None
        other._clock = self._given_clock
        other._opening = LoopLock()
        other.registry = self.registry.bound(other)  # its features on the copy's store
        return other
