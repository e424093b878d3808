"""The producer's calls: ``schedule``, ``submit`` and ``schedule_many`` (a part of the
:class:`~duetime.client.Client`), each checked at the door (:mod:`duetime.calls.newtask`) and
written by the store; on conditions (``if_exists``, ``unique_for``) through
:mod:`duetime.calls.conditions`."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, overload

from duetime.calls import conditions
from duetime.calls.newtask import new_task
from duetime.calls.transaction import store_on
from duetime.clock import from_ms
from duetime.errors import StoreError, UnknownTaskType, ValidationError
from duetime.model import IfExists, Task
from duetime.registry import ClientSide
from duetime.stores.base import NewTask, Store
from duetime.stores.capabilities import CONDITIONAL, require, use
from duetime.stores.conditional import Answer
from duetime.validate import check_name, new_task_id

if TYPE_CHECKING:  # loaded by the first task that repeats by the calendar
    from duetime.interval import CalendarInterval

#: How many ids :meth:`ProducerCalls.submit` draws before it gives up (one taken id in 2**71).
SUBMIT_TRIES = 5


class ProducerCalls:
    """The calls that write tasks, of a client or app (a part of it)."""

    @overload
    async def schedule(
        self: ClientSide,
        task_type: str,
        task_id: str,
        *,
        at: datetime | None = ...,
        delay: timedelta | float | None = ...,
        payload: dict[str, Any] | None = ...,
        every: timedelta | CalendarInterval | float | None = ...,
        until: datetime | None = ...,
        limit: int | None = ...,
        if_exists: IfExists = ...,
        unique_for: None = ...,
        priority: int | None = ...,
        group: str | None = ...,
        connection: object = ...,
        meta: dict[str, Any] | None = ...,
    ) -> datetime: ...

    @overload
    async def schedule(
        self: ClientSide,
        task_type: str,
        task_id: str,
        *,
        at: datetime | None = ...,
        delay: timedelta | float | None = ...,
        payload: dict[str, Any] | None = ...,
        every: timedelta | CalendarInterval | float | None = ...,
        until: datetime | None = ...,
        limit: int | None = ...,
        if_exists: IfExists = ...,
        unique_for: timedelta | float,
        priority: int | None = ...,
        group: str | None = ...,
        connection: object = ...,
        meta: dict[str, Any] | None = ...,
    ) -> datetime | None: ...

    async def schedule(
        self: ClientSide,
        task_type: str,
        task_id: str,
        *,
        at: datetime | None = None,
        delay: timedelta | float | None = None,
        payload: dict[str, Any] | None = None,
        every: timedelta | CalendarInterval | float | None = None,
        until: datetime | None = None,
        limit: int | None = None,
        if_exists: IfExists = "replace",
        unique_for: timedelta | float | None = None,
        priority: int | None = None,
        group: str | None = None,
        connection: object = None,
        meta: dict[str, Any] | None = None,
    ) -> datetime | None:
        """Schedule a task; if ``(task_type, task_id)`` exists, move it and replace its payload
        (unless ``if_exists`` says otherwise).

        Args:
            task_type: a registered or declared task type.
            task_id: unique within its type: scheduling the same id again is idempotent.
            at: an aware datetime; or ``delay`` from now (by the store's clock). Neither
                means now.
            payload: a JSON object (dict), at most ``max_payload_bytes`` as JSON.
            every: make it periodic: each occurrence is due ``every`` after the previous
                one's due time; with a :class:`~duetime.CalendarInterval`, at the first
                occurrence's wall-clock time that many days (or months) later.
            until: the last time an occurrence may be due.
            limit: the most occurrences the series runs (done or dead).
            if_exists: what to do when a task with the id is pending (waits, or runs):
                ``"replace"`` it (a new occurrence, due as given: repeated calls debounce),
                ``"keep"`` it as it is, or ``"merge"`` the payload into its payload (nested
                dicts merge, anything else is replaced), moving it only when ``at`` or
                ``delay`` is given. A merge into a running task makes a new occurrence that
                runs after it. A dead task is not pending: it is replaced.
            unique_for: when a run of the task finished (done or dead) less than this long
                ago, write nothing and return None. Only runs of tasks scheduled with
                ``unique_for`` are remembered, each for the window it was scheduled with.
            priority: -100 to 100 (default: the type's, 0 unless it says): among the
                type's due tasks, higher is claimed first, equal priorities earliest due
                first. No task starts before its due time. A ``"keep"`` or ``"merge"``
                into a pending task leaves its priority as it is.
            group: the group it belongs to (text like an id; None for none): the type's
                ``group_concurrency`` and ``group_rate`` hold each group on its own, so a
                busy group does not hold back the others (see the flow control guide).
                A ``"keep"`` or ``"merge"`` into a pending task leaves its group as it is.
            connection: the application's connection to the store's database (PostgreSQL:
                a psycopg 3 ``AsyncConnection``, or a ``Connection`` through ``app.sync()``):
                the task is written inside the transaction open on it, and exists only once
                that commits (workers are woken then); duetime never commits or rolls it
                back. See docs/transactions.md.
            meta: metadata for the code around the handler (``ctx.meta``, middleware,
                ``TaskInfo.meta``): a dict of string keys and JSON values, at most 4 KiB
                as JSON, kept with every retry and occurrence. A ``"merge"`` without it
                keeps the pending task's.

        Returns:
            When the task is due, as an aware UTC datetime (with ``"keep"``, the pending
            task's; of a running one, when its run was due); None when ``unique_for`` wrote
            nothing.

        Raises:
            ValidationError: a field is wrong (the error names it); nothing is written.
            UnknownTaskType: the type is neither registered nor declared.
            ConfigError: ``connection`` is refused: the store shares no transaction with the
                application (Redis), or the connection is of a type it cannot use, closed,
                in a failed transaction, or to another database (the error says which).
            StoreUnavailable: the store cannot be reached; the task may or may not have been
                written, and scheduling again is safe.
        """
        spec = Task(
            task_type,
            task_id,
            at,
            delay,  # type: ignore[arg-type]
            payload,
            every,  # type: ignore[arg-type]
            until,
            limit,
            if_exists,
            unique_for,  # type: ignore[arg-type]
            priority,
            group,
            meta,
        )
        spec = self.registry.stamped(spec)
        store, new = await _prepare(self, spec, connection)
        if if_exists == "replace" and unique_for is None:
            await store.schedule(task_type, (new,))
            return from_ms(new.due_ms)
        (answer,) = await _write_if(self, store, task_type, [conditions.wanted(spec, new)])
        return None if answer.due_ms is None else from_ms(answer.due_ms)

    async def submit(
        self: ClientSide,
        task_type: str,
        *,
        at: datetime | None = None,
        delay: timedelta | float | None = None,
        payload: dict[str, Any] | None = None,
        every: timedelta | CalendarInterval | float | None = None,
        until: datetime | None = None,
        limit: int | None = None,
        priority: int | None = None,
        group: str | None = None,
        connection: object = None,
        meta: dict[str, Any] | None = None,
    ) -> str:
        """Schedule a new task under an id duetime picks, and return that id.

        For tasks that need no name of their own (send this mail in an hour). The options
        are :meth:`schedule`'s. The id is 12 letters and digits, 71 random bits, and never
        one in use in the type: should it be taken, another is drawn. A short id costs
        less store memory than a long one.

        Raises:
            ValidationError, UnknownTaskType: as :meth:`schedule`; nothing is written.
            StoreUnavailable: the store cannot be reached; the task may or may not have been
                written (submitting again may then make a second task: use
                :meth:`schedule` with an id of your own where that matters).
        """
        spec = Task(
            task_type,
            new_task_id(),
            at,
            delay,  # type: ignore[arg-type]
            payload,
            every,  # type: ignore[arg-type]
            until,
            limit,
            priority=priority,
            group=group,
            meta=meta,
        )
        spec = self.registry.stamped(spec)
        store, new = await _prepare(self, spec, connection)
        for draw in range(SUBMIT_TRIES):
            if draw:  # the id is taken: the same task under another
                new = new._replace(id=new_task_id())
            if not await store.schedule(task_type, (new,), only_new=True):
                return new.id
        raise StoreError(f"no free id for a new {task_type} task in {SUBMIT_TRIES} draws")

    async def schedule_many(
        self: ClientSide, tasks: Iterable[Task], *, connection: object = None
    ) -> int:
        """Schedule many tasks in as few round trips as possible (one per type and 1,000).

        Every task is checked before any is written. Returns how many were scheduled:
        written, replaced or merged into (not those ``if_exists="keep"`` or ``unique_for``
        left alone). Tasks of one id in one call are written in their order: the last wins
        (with ``if_exists`` or ``unique_for``, each is applied in turn, one round trip each).
        With ``connection``, every task is written in its transaction, as :meth:`schedule`.
        """
        specs = list(tasks)
        for n, spec in enumerate(specs):  # refused at the door, before any connection
            if not isinstance(spec, Task):
                raise ValidationError(f"tasks[{n}]", "must be a duetime.Task")
            if spec.task_type not in self.types:
                check_name(f"tasks[{n}].task_type", spec.task_type)
                raise UnknownTaskType(spec.task_type, tuple(self.types), f"tasks[{n}].task_type")
        specs = [self.registry.stamped(spec) for spec in specs]
        store = await opened(self, connection)
        now = self.clock.now_ms()
        by_type: dict[str, list[tuple[Task, NewTask]]] = {}
        for n, spec in enumerate(specs):
            try:
                new = new_task(
                    spec, now, self.max_payload_bytes, self.types[spec.task_type].priority
                )
            except ValidationError as exc:
                raise type(exc)(f"tasks[{n}].{exc.field}", exc.problem) from None
            by_type.setdefault(spec.task_type, []).append((spec, new))
        written = 0
        for name, batch in by_type.items():
            if any(conditions.is_conditional(spec) for spec, _ in batch):
                given = [conditions.wanted(spec, new) for spec, new in batch]
                for turn in conditions.turns(given):  # each id once a turn, in order
                    answers = await _write_if(self, store, name, turn)
                    written += sum(answer.verdict == "written" for answer in answers)
            else:
                await store.schedule(name, [new for _, new in batch])
                written += len(batch)
        return written


async def opened(client: ClientSide, connection: object) -> Store:
    """The client's store, open; with ``connection``, on it (:mod:`duetime.calls.transaction`)."""
    return await (client.open() if connection is None else store_on(client, connection))


async def _prepare(client: ClientSide, spec: Task, connection: object) -> tuple[Store, NewTask]:
    """Check one task (before any connection when it has ``at``) and open the store."""
    default = client.task_type(spec.task_type).priority
    if spec.at is not None:  # refused at the door, before any connection is made
        new = new_task(spec, None, client.max_payload_bytes, default)
        return await opened(client, connection), new
    store = await opened(client, connection)
    return store, new_task(spec, client.clock.now_ms(), client.max_payload_bytes, default)


async def _write_if(
    client: ClientSide, store: Store, task_type: str, tasks: list[conditions.Wanted]
) -> list[Answer]:
    """Write tasks on their conditions (ids distinct): see :mod:`duetime.calls.conditions`."""
    require(client.store(), CONDITIONAL, "if_exists and unique_for", client.where())
    now, limit = client.clock.now_ms(), client.max_payload_bytes
    return await conditions.write(use(store, CONDITIONAL), task_type, tasks, now, limit)
