"""The App: a Client with handlers, cron schedules and workers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from duetime.client import Client
from duetime.errors import ConfigError, DuplicateTaskNameError, ValidationError
from duetime.model import (
    DEFAULT_CONCURRENCY,
    DEFAULT_LEASE,
    DEFAULT_MAX_STALLS,
    DEFAULT_TIMEOUT,
    Backoff,
    Delivery,
    Pacing,
    TaskPolicy,
)
from duetime.monitor import TypeHistory, WorkerInfo, read_history, read_workers
from duetime.stores import REDIS_SCHEMES, redact
from duetime.tasktype import Handler, TaskType, call_mode
from duetime.triggers.cron import manage as cron
from duetime.triggers.cron.policy import Missed, Overlap
from duetime.triggers.expiring.group import ExpiringGroup
from duetime.triggers.keyspace import UNROUTED, KeyRoute, file_unrouted
from duetime.triggers.poller.poller import (
    Active,
    Delay,
    Limit,
    Poller,
    PollerSettings,
    Scheduler,
    default_delay,
    default_limit,
)
from duetime.triggers.poller.registry import POLLER_LEASE, poller_type
from duetime.validate import check_int, check_name, check_partitions, duration_ms

if TYPE_CHECKING:
    from duetime.sync import SyncClient
    from duetime.worker import Worker


class App(Client):
    """The registry of task types and cron schedules, and the entry point for producers
    and workers.

    Args:
        url: the store: ``redis://host:port/db``, ``rediss://...``, ``unix://...``,
            ``redis+sentinel://host:port,.../service/db`` or ``sqlite:///path``. None
            reads ``DUETIME_URL``, and without it uses the SQLite file ``duetime.db`` in the
            working directory.
        namespace: keeps apps sharing one store apart.
        clock: where "now" comes from; by default the store's own clock.
        max_payload_bytes: the largest payload accepted, as JSON.
        allow_eviction: accept a Redis that evicts keys (loses tasks); refused otherwise.
        durability: ``"local"`` (default): a write returns once the store has it;
            ``"replicated"`` (Redis with replicas): once a replica has it too, so that an
            acknowledged write survives the loss of the primary.
        store: a store object to use instead of one made from ``url``.

    The store is opened on first use, in the running event loop; ``async with app`` or
    ``await app.close()`` closes it. The calls on tasks (schedule, submit, get, ...) are
    :class:`~duetime.client.Client`'s.
    """

    # -- registry -----------------------------------------------------------------------

    def task(
        self,
        name: str,
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        timeout: timedelta | float | None = DEFAULT_TIMEOUT,
        retries: int | None = None,
        backoff: Backoff | timedelta | float | None = None,
        lease: timedelta | float = DEFAULT_LEASE,
        max_stalls: int = DEFAULT_MAX_STALLS,
        delivery: Delivery = "at_least_once",
        pacing: Pacing | None = None,
        partitions: int = 1,
    ) -> Callable[[Handler], TaskType]:
        """Register the decorated function as the handler of task type ``name``.

        The handler takes ``(payload)`` or ``(payload, ctx)`` and may be ``async def`` or a
        plain ``def`` (run in a thread pool). See :class:`TaskPolicy` for the options;
        ``retries`` defaults to 3, or 0 with at-most-once delivery. ``partitions`` spreads
        the type's tasks over that many hash slots (on Redis Cluster, several primaries);
        every process must give the same number.

        Raises:
            ValidationError: a bad name or option, or a name already registered.
        """
        check_name("task_type", name)
        check_partitions(partitions)
        policy = TaskPolicy.from_options(
            concurrency=concurrency,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            lease=lease,
            max_stalls=max_stalls,
            delivery=delivery,
        )

        def register(fn: Handler) -> TaskType:
            mode = call_mode(fn, cron=False)
            task_type = TaskType(name, None, policy, pacing or Pacing(), partitions=partitions)
            task_type.bind(fn, mode)
            task_type.scheduler = self.schedule
            return self._add(task_type)

        return register

    def expiring(
        self, name: str, *, ttl: timedelta | float, pacing: Pacing | None = None, **options: Any
    ) -> ExpiringGroup:
        """An expiring group: values put under keys that go to its handler (set with
        ``@group.on_expire``) when their TTL runs out, once each, on one worker.

        Entries live in the store, indexed by expiry: they are handled on time whatever
        Redis's keyspace notifications do, and those that expired while every worker was
        down are handled when one starts. The group is a task type named ``name``: the
        other options are :meth:`task`'s (retries, backoff, timeout, concurrency, lease),
        and an expiry that keeps failing ends in its dead letters with its value.

        Raises:
            ValidationError: a bad name, TTL or option, or a name already taken.
        """
        check_name("task_type", name)
        policy = TaskPolicy.from_options(**options)
        group_type = TaskType(
            name,
            None,
            policy,
            pacing or Pacing(),
            mode="fields_ctx",
            takes=("key", "value"),
            scheduler=self.schedule,
        )
        group = ExpiringGroup(
            group_type,
            ttl,
            open_store=self.open,
            now_ms=self.now_ms,
            max_payload_bytes=self.max_payload_bytes,
        )
        self._add(group_type)
        self.expiring_groups[name] = group
        return group

    def poller(
        self,
        name: str,
        *,
        concurrency: int = 1,
        delay: Delay = default_delay,
        calculate_limit: Limit = default_limit,
        active: Active | None = None,
        timeout: timedelta | float | None = DEFAULT_TIMEOUT,
        lease: timedelta | float = POLLER_LEASE,
    ) -> Callable[[Scheduler], Poller]:
        """Register the decorated function as the scheduler of the poller ``name``
        (Planton's task): called with a :class:`~duetime.PollContext` by one worker at a
        time, it returns instructions (strings), at most ``ctx.limit`` of them. With
        ``@poller.handler``, each becomes a task of type ``name`` whose id is the
        instruction; without, they only go to ``app.events`` listeners.

        Args:
            concurrency: the most instructions active at once, across every worker.
            delay: ``(attempt) -> seconds`` (a number or timedelta; may be async): the wait
                before the next call, ``attempt`` counting the calls in a row that produced
                nothing; see :func:`~duetime.triggers.poller.poller.default_delay`.
            calculate_limit: ``(concurrency, active_instructions) -> int`` (may be async);
                by default the free slots. The scheduler is not called while it is 0 or less.
            active: ``(name) -> list[str]`` (may be async): the active instructions, for
                instructions run elsewhere; by default the pending and running tasks of
                the handler's type (none without a handler).
            timeout: how long one call of the scheduler may take.
            lease: how long a worker that stopped answering (killed, frozen, cut off)
                holds the poller's call before another worker takes it over; renewed while
                the call runs. 10 s by default.

        Raises:
            DuplicateTaskNameError: ``name`` is taken by a task type or another poller.
            InvalidTaskConfigurationError: a concurrency below 1, a delay, limit or active
                that is not callable, or a worker of this app runs already.
        """
        check_name("name", name)
        seconds = None if timeout is None else duration_ms("timeout", timeout) / 1000
        lease_ms = duration_ms("lease", lease)
        settings = PollerSettings(concurrency, delay, calculate_limit, active, seconds, lease_ms)
        settings.check(name)
        self.pollers.check_open(name)

        def register(scheduler: Scheduler) -> Poller:
            self._check_free(name, poller=True)
            poller = Poller(
                name,
                scheduler,
                settings,
                events=self.events,
                add_handler=self._instruction_handler,
                open_store=self.open,
                now_ms=self.now_ms,
            )
            self.pollers.add(poller)
            self._add(poller_type(poller, self.schedule))
            return poller

        return register

    def _instruction_handler(self, name: str, fn: Handler, options: dict[str, Any]) -> TaskType:
        self.pollers.check_open(name)
        task_type = self.task(name, **options)(fn)
        task_type.mode, task_type.takes = call_mode(fn, takes=("instruction",)), ("instruction",)
        return task_type

    def on_key_expired(
        self, pattern: str, *, db: int = 0, name: str | None = None, **options: Any
    ) -> Callable[[Handler], TaskType]:
        """Run the decorated function when a key matching ``pattern`` (a glob) expires in
        Redis database ``db``: keys other programs write. It takes ``(key)`` or ``(key,
        ctx)``, and runs as a task of type ``name`` (default: its own name) with
        :meth:`task`'s options, once across workers for each expiry.

        At most once, and on Redis's time: the expiry events are Redis's keyspace
        notifications, which Redis publishes when it removes the key (seconds late with many
        volatile keys), and an event published while no worker listens is gone. Two expiries
        of one key within 5 s count as one. For work that must not be lost, use
        :meth:`expiring`. A worker turns the notifications on (``notify-keyspace-events``
        flags ``E`` and ``x``) when it can.

        Raises:
            ConfigError: the store is not Redis.
            ValidationError: a bad pattern, database, name or option.
        """
        if not isinstance(pattern, str) or not pattern:
            raise ValidationError("pattern", "must be a non-empty glob such as 'session:*'")
        return self._key_route("expired", db, name, options, pattern=pattern)

    def key_timer(self, name: str, *, db: int = 0, **options: Any) -> Callable[[Handler], TaskType]:
        """Run the decorated function for key timers named ``name`` in Redis database
        ``db``: keys ``<id>:??<name>??<JSON>`` that expire, as a key-name timer scheduler's
        producers write them (SET, then EXPIRE, in one MULTI). It takes ``(message)`` or
        ``(message, ctx)``, the JSON parsed, and runs as a task of type ``name`` with
        :meth:`task`'s options, once across workers for each key. Keys naming no handler, or
        that do not parse, go to the dead letters of type ``duetime.keyTimers``, never run.
        At most once, on Redis's time, as :meth:`on_key_expired`.

        Raises:
            ConfigError: the store is not Redis.
            ValidationError: a bad name, database or option.
        """
        return self._key_route("timer", db, name, options)

    def _key_route(
        self,
        kind: Literal["expired", "timer"],
        db: int,
        name: str | None,
        options: dict[str, Any],
        pattern: str = "",
    ) -> Callable[[Handler], TaskType]:
        scheme = urlsplit(self.url).scheme.lower()
        if scheme not in REDIS_SCHEMES:
            raise ConfigError(
                f"key expiry handlers need a Redis store: keys of {redact(self.url)} do not expire"
            )
        if scheme.endswith("+cluster") and db != 0:
            raise ConfigError(f"a Redis Cluster has database 0 only, not {db}")
        check_int("db", db, minimum=0)
        takes = ("key",) if kind == "expired" else ("message",)

        def register(fn: Handler) -> TaskType:
            type_name = check_name("name", name or getattr(fn, "__name__", ""))
            task_type = self.task(type_name, **options)(fn)
            task_type.mode, task_type.takes = call_mode(fn, takes=takes), takes
            route = KeyRoute(kind, db, type_name, pattern, type_name if kind == "timer" else "")
            self.key_routes.append(route)
            if kind == "timer" and UNROUTED not in self.types:
                self.task(UNROUTED, retries=0)(file_unrouted)
            return task_type

        return register

    def cron(
        self,
        expression: str,
        *,
        name: str,
        tz: str = "UTC",
        payload: dict[str, Any] | None = None,
        missed: Missed = "skip",
        overlap: Overlap = "skip",
        jitter: timedelta | float | None = None,
        catchup: timedelta | float | None = None,
        **options: Any,
    ) -> Callable[[Handler], TaskType]:
        """Run the decorated function on a cron schedule: task type and schedule ``name``.

        The handler takes ``(ctx)`` or ``(payload, ctx)``; ``ctx.occurrence`` is
        ``"<name>@<tick ms>"``, the same on every worker and every attempt. The schedule is
        written to the store when a worker starts, so it survives restarts; declaring it
        again with another definition updates it. See :meth:`add_cron` for the schedule's
        options; the others are those of :meth:`task` (retries, timeout, ...).

        Raises:
            ValidationError: a bad expression (naming the field), time zone, policy or
                jitter, or a name already taken by another handler.
        """
        check_name("task_type", name)
        declared = cron.define(
            name,
            name,
            expression,
            tz=tz,
            payload=payload,
            missed=missed,
            overlap=overlap,
            jitter=jitter,
            catchup=catchup,
            max_payload_bytes=self.max_payload_bytes,
        )
        register_type = self.task(name, **options)

        def register(fn: Handler) -> TaskType:
            mode = call_mode(fn, cron=True)
            task_type = register_type(fn)
            task_type.mode = mode
            self.named_triggers.declare(declared)
            return task_type

        return register

    def _check_free(self, name: str, *, poller: bool = False) -> None:
        existing = self.types.get(name)
        if existing is not None and not existing.declared:
            taken = "an expiring group" if existing.handler is None else repr(existing.handler)
            raise DuplicateTaskNameError(name, taken)
        if poller and name in self.pollers.by_name:
            raise DuplicateTaskNameError(name, "another poller")

    def _add(self, task_type: TaskType) -> TaskType:
        self._check_free(task_type.name)
        self.types[task_type.name] = task_type
        return task_type

    # -- watching -----------------------------------------------------------------------

    async def workers(self) -> list[WorkerInfo]:
        """The workers of this namespace alive now, on any machine, from their heartbeat
        records in the store (one lapses 15 s after its worker's last beat)."""
        return await read_workers(await self.open(), await self.now_ms())

    async def history(self, minutes: int = 60) -> dict[str, TypeHistory]:
        """What happened to each task type in the last ``minutes`` (1 to 60, the current
        minute included), per minute, as the workers counted it."""
        if check_int("minutes", minutes) > 60:
            raise ValidationError("minutes", "must be 60 or fewer: the store keeps one hour")
        return await read_history(await self.open(), await self.now_ms(), minutes)

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
        less often (``duetime.worker.runtime.tune_gc``). ``options`` go to :meth:`worker`.
        """
        from duetime.worker.runtime import run_worker

        run_worker(self.worker(types, **options), gc_tuning=gc_tuning)

    def sync(self) -> SyncClient:
        """A blocking client with the same calls, for code that is not async."""
        from duetime.sync import SyncClient

        return SyncClient(self)
