"""The App: the registry of task types, and the producer's calls (schedule, cancel, get, list)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from duetime.clock import Clock, StoreClock
from duetime.codec import (
    DEFAULT_MAX_PAYLOAD_BYTES,
    check_id,
    check_name,
    decode_record,
    dump_json,
    encode_record,
    from_ms,
    new_task_id,
    to_ms,
)
from duetime.config import open_store, resolve_url
from duetime.convert import build_policy, to_info, to_new_task
from duetime.cronapi import CronMethods
from duetime.errors import (
    DuetimeError,
    SchemaError,
    StoreError,
    TaskNotFound,
    UnknownTaskType,
    ValidationError,
)
from duetime.model import (
    DEFAULT_CONCURRENCY,
    DEFAULT_LEASE,
    DEFAULT_MAX_STALLS,
    DEFAULT_TIMEOUT,
    Backoff,
    Delivery,
    Pacing,
    Task,
    TaskInfo,
    TaskPolicy,
)
from duetime.schedules import Schedules
from duetime.stores.base import STATES, NewTask, State, Store
from duetime.tasktype import Handler, TaskType, call_mode

if TYPE_CHECKING:
    from duetime.sync import SyncClient
    from duetime.worker import Worker

log = logging.getLogger(__name__)

#: How many ids :meth:`App.submit` draws before it gives up (one taken id in 2**71).
SUBMIT_TRIES = 5


class App(CronMethods):
    """The registry of task types, and the entry point for producers and workers.

    Args:
        url: the store: ``redis://host:port/db``, ``rediss://...``, ``unix://...`` or
            ``sqlite:///path``. None reads ``DUETIME_URL``, and without it uses the
            SQLite file ``duetime.db`` in the working directory.
        namespace: keeps apps sharing one store apart.
        clock: where "now" comes from; by default the store's own clock.
        max_payload_bytes: the largest payload accepted, as JSON.
        allow_eviction: accept a Redis that evicts keys (loses tasks); refused otherwise.
        store: a store object to use instead of one made from ``url``.

    The store is opened on first use, in the running event loop; ``async with app`` or
    ``await app.close()`` closes it.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        namespace: str = "default",
        clock: Clock | None = None,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
        allow_eviction: bool = False,
        store: Store | None = None,
    ) -> None:
        self.url = resolve_url(url)
        self.namespace = check_name("namespace", namespace)
        if not isinstance(max_payload_bytes, int) or max_payload_bytes < 2:
            raise ValidationError("max_payload_bytes", "must be an integer of 2 or more")
        self.max_payload_bytes = max_payload_bytes
        self.allow_eviction = allow_eviction
        self.types: dict[str, TaskType] = {}
        self.schedules = Schedules(self)
        self._given_clock = clock
        self._given_store = store
        self._store: Store | None = None
        self._clock: Clock | None = clock
        self._opening: asyncio.Lock | None = None

    # -- registry -----------------------------------------------------------------------

    def task(
        self,
        name: str,
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        timeout: timedelta | float | None = DEFAULT_TIMEOUT,
        retries: int | None = None,
        backoff: Backoff | None = None,
        lease: timedelta | float = DEFAULT_LEASE,
        max_stalls: int = DEFAULT_MAX_STALLS,
        delivery: Delivery = "at_least_once",
        pacing: Pacing | None = None,
    ) -> Callable[[Handler], TaskType]:
        """Register the decorated function as the handler of task type ``name``.

        The handler takes ``(payload)`` or ``(payload, ctx)`` and may be ``async def`` or a
        plain ``def`` (run in a thread pool). See :class:`TaskPolicy` for the options;
        ``retries`` defaults to 3, or 0 with at-most-once delivery.

        Raises:
            ValidationError: a bad name or option, or a name already registered.
        """
        check_name("task_type", name)
        policy = build_policy(concurrency, timeout, retries, backoff, lease, max_stalls, delivery)

        def register(fn: Handler) -> TaskType:
            mode = call_mode(fn, cron=False)
            return self._add(TaskType(self, name, fn, policy, pacing or Pacing(), mode))

        return register

    def declare(self, *names: str) -> None:
        """Declare task types this process schedules but does not run.

        A producer without the handlers' code declares the types it sends, so that a typo
        in a type name still fails at ``schedule``. Declaring a registered type is a no-op.
        """
        for name in names:
            check_name("task_type", name)
            if name not in self.types:
                self.types[name] = TaskType(self, name, None, TaskPolicy(), Pacing())

    def _add(self, task_type: TaskType) -> TaskType:
        existing = self.types.get(task_type.name)
        if existing is not None and existing.handler is not None:
            raise ValidationError(
                "task_type", f"{task_type.name!r} is already registered to {existing.handler!r}"
            )
        self.types[task_type.name] = task_type
        return task_type

    def _type(self, name: object) -> TaskType:
        task_type = self.types.get(name) if isinstance(name, str) else None
        if task_type is None:
            check_name("task_type", name)
            raise UnknownTaskType(str(name), tuple(self.types))
        return task_type

    # -- lifecycle ----------------------------------------------------------------------

    async def open(self) -> Store:
        """Open the store (once) and sync the clock; returns the store."""
        if self._store is not None:
            return self._store
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._store is None:
                store = self._given_store or open_store(
                    self.url, namespace=self.namespace, allow_eviction=self.allow_eviction
                )
                await store.open()
                if self._given_clock is None:
                    clock = StoreClock(store.time_ms)
                    await clock.sync()
                    self._clock = clock
                self._store = store
        return self._store

    async def close(self) -> None:
        """Close the store. The app can be opened again afterwards."""
        store, self._store = self._store, None
        self._opening = None
        if store is not None:
            await store.close()
        self._clock = self._given_clock

    async def __aenter__(self) -> App:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def clock(self) -> Clock:
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

    # -- producing ----------------------------------------------------------------------

    def _new_task(self, task: Task, now_ms: int | None) -> NewTask:
        self._type(task.task_type)
        return to_new_task(task, now_ms, self.max_payload_bytes)

    async def schedule(
        self,
        task_type: str,
        task_id: str,
        *,
        at: datetime | None = None,
        delay: timedelta | float | None = None,
        payload: dict[str, Any] | None = None,
        every: timedelta | float | None = None,
        until: datetime | None = None,
    ) -> datetime:
        """Schedule a task; if ``(task_type, task_id)`` exists, move it and replace its payload.

        Args:
            task_type: a registered or declared task type.
            task_id: unique within its type: scheduling the same id again is idempotent.
            at: an aware datetime; or ``delay`` from now (by the store's clock). Neither
                means now.
            payload: a JSON object (dict), at most ``max_payload_bytes`` as JSON.
            every: make it periodic: each occurrence is due ``every`` after the previous
                one's due time.
            until: the last time an occurrence may be due.

        Returns:
            When the task is due, as an aware UTC datetime.

        Raises:
            ValidationError: a field is wrong (the error names it); nothing is written.
            UnknownTaskType: the type is neither registered nor declared.
            StoreUnavailable: the store cannot be reached; the task may or may not have been
                written, and scheduling again is safe.
        """
        spec = Task(task_type, task_id, at, delay, payload, every, until)  # type: ignore[arg-type]
        store, new = await self._prepare(spec)
        await store.schedule(task_type, (new,))
        return from_ms(new.due_ms)

    async def submit(
        self,
        task_type: str,
        *,
        at: datetime | None = None,
        delay: timedelta | float | None = None,
        payload: dict[str, Any] | None = None,
        every: timedelta | float | None = None,
        until: datetime | None = None,
    ) -> str:
        """Schedule a new task under an id duetime picks, and return that id.

        For tasks that need no name of their own (send this mail in an hour). The options
        are :meth:`schedule`'s. The id is 12 letters and digits, 71 random bits, and never
        one in use in the type: should it be taken, another is drawn. A short id costs
        less store memory: about 295 bytes a pending task in Redis with a 100-byte
        payload, against about 365 under a 32-character id.

        Raises:
            ValidationError, UnknownTaskType: as :meth:`schedule`; nothing is written.
            StoreUnavailable: the store cannot be reached; the task may or may not have been
                written (submitting again may then make a second task: use
                :meth:`schedule` with an id of your own where that matters).
        """
        spec = Task(task_type, new_task_id(), at, delay, payload, every, until)  # type: ignore[arg-type]
        store, new = await self._prepare(spec)
        for draw in range(SUBMIT_TRIES):
            if draw:  # the id is taken: the same task under another
                new = new._replace(id=new_task_id())
            if not await store.schedule(task_type, (new,), only_new=True):
                return new.id
        raise StoreError(f"no free id for a new {task_type} task in {SUBMIT_TRIES} draws")

    async def _prepare(self, spec: Task) -> tuple[Store, NewTask]:
        """Check one task (before any connection when it has ``at``) and open the store."""
        if spec.at is not None:  # refused at the door, before any connection is made
            new = self._new_task(spec, None)
            return await self.open(), new
        self._type(spec.task_type)
        store = await self.open()
        return store, self._new_task(spec, self.clock.now_ms())

    async def schedule_many(self, tasks: Iterable[Task]) -> int:
        """Schedule many tasks in as few round trips as possible (one per type and 1,000).

        Every task is checked before any is written. Returns how many were scheduled.
        """
        specs = list(tasks)
        for n, spec in enumerate(specs):  # refused at the door, before any connection
            if not isinstance(spec, Task):
                raise ValidationError(f"tasks[{n}]", "must be a duetime.Task")
            if spec.task_type not in self.types:
                check_name(f"tasks[{n}].task_type", spec.task_type)
                raise UnknownTaskType(spec.task_type, tuple(self.types), f"tasks[{n}].task_type")
        store = await self.open()
        now = self.clock.now_ms()
        by_type: dict[str, list[NewTask]] = {}
        limit = self.max_payload_bytes
        for n, spec in enumerate(specs):
            try:
                new = to_new_task(spec, now, limit)
            except ValidationError as exc:
                raise type(exc)(f"tasks[{n}].{exc.field}", exc.problem) from None
            by_type.setdefault(spec.task_type, []).append(new)
        for name, batch in by_type.items():
            await store.schedule(name, batch)
        return len(specs)

    async def cancel(self, task_type: str, task_id: str) -> bool:
        """Cancel a task, due, dead or running. Returns whether it existed.

        A running handler is not interrupted, but its task will not be retried or
        rescheduled.
        """
        self._type(task_type)
        check_id(task_id)
        return await (await self.open()).cancel(task_type, task_id)

    async def retry(self, task_type: str, task_id: str, *, at: datetime | None = None) -> datetime:
        """Run a dead task again, at ``at`` or now, with its attempts counted afresh.

        Raises:
            TaskNotFound: there is no dead task with this id.
        """
        self._type(task_type)
        check_id(task_id)
        store = await self.open()
        due = to_ms("at", at) if at is not None else self.clock.now_ms()
        stored = await store.get(task_type, task_id)
        if stored is None or stored.state != "dead":
            raise TaskNotFound(task_type, task_id, "dead")
        record = None
        if stored.record is not None:
            try:
                old = decode_record(stored.record)
            except SchemaError:
                pass  # kept as it is: the worker will file it as corrupt again, with the reason
            else:
                record = encode_record(
                    dump_json(old.payload), old.every_ms, old.until_ms, old.occurrence_ms
                )
        if not await store.revive(task_type, task_id, due, record):
            raise TaskNotFound(task_type, task_id, "dead")
        return from_ms(due)

    # -- reading ------------------------------------------------------------------------

    async def get(self, task_type: str, task_id: str) -> TaskInfo | None:
        """The task with this id, or None."""
        self._type(task_type)
        check_id(task_id)
        stored = await (await self.open()).get(task_type, task_id)
        return None if stored is None else to_info(task_type, stored)

    async def list(
        self, task_type: str, state: State = "due", *, limit: int = 100, offset: int = 0
    ) -> list[TaskInfo]:
        """Tasks of a type in one state (``due``, ``running`` or ``dead``), earliest first."""
        self._type(task_type)
        if state not in STATES:
            raise ValidationError("state", f"must be one of {', '.join(STATES)}")
        if not isinstance(limit, int) or limit < 1 or not isinstance(offset, int) or offset < 0:
            raise ValidationError("limit", "limit must be 1 or more and offset 0 or more")
        rows = await (await self.open()).list_tasks(task_type, state, limit, offset)
        return [to_info(task_type, row) for row in rows]

    async def counts(self, task_type: str) -> dict[State, int]:
        """How many tasks of a type are due, running and dead."""
        self._type(task_type)
        return await (await self.open()).count(task_type)

    # -- running ------------------------------------------------------------------------

    def worker(self, types: Sequence[str] | None = None, **options: Any) -> Worker:
        """A worker for ``types`` (default: every type with a handler); see :class:`Worker`."""
        from duetime.worker import Worker

        return Worker(self, types, **options)

    async def serve(self, types: Sequence[str] | None = None, **options: Any) -> None:
        """Run a worker in this event loop until it is stopped or cancelled."""
        await self.worker(types, **options).run()

    def run(
        self, types: Sequence[str] | None = None, *, gc_tuning: bool = True, **options: Any
    ) -> None:
        """Run a worker until SIGTERM or SIGINT, then shut down gracefully.

        The worker owns the process: unless ``gc_tuning`` is False, the garbage collector
        skips the objects that exist when the worker starts and collects young objects
        less often (``duetime.runtime.tune_gc``). ``options`` go to :meth:`worker`.
        """
        from duetime.runtime import run_worker

        run_worker(self.worker(types, **options), gc_tuning=gc_tuning)

    def sync(self) -> SyncClient:
        """A blocking client with the same calls, for code that is not async."""
        from duetime.sync import SyncClient

        return SyncClient(self)
