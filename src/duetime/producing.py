"""The producer's calls: ``schedule``, ``submit`` and ``schedule_many`` (a part of the
:class:`~duetime.client.Client`), each checked at the door (:mod:`duetime.newtask`) and
written by the store."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from duetime.clock import from_ms
from duetime.errors import StoreError, UnknownTaskType, ValidationError
from duetime.model import Task
from duetime.newtask import new_task
from duetime.registry import ClientSide
from duetime.stores.base import NewTask, Store
from duetime.validate import check_name, new_task_id

#: How many ids :meth:`ProducerCalls.submit` draws before it gives up (one taken id in 2**71).
SUBMIT_TRIES = 5


class ProducerCalls:
    """The calls that write tasks, of a client or app (a part of it)."""

    async def schedule(
        self: ClientSide,
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
        store, new = await _prepare(self, spec)
        await store.schedule(task_type, (new,))
        return from_ms(new.due_ms)

    async def submit(
        self: ClientSide,
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
        less store memory than a long one.

        Raises:
            ValidationError, UnknownTaskType: as :meth:`schedule`; nothing is written.
            StoreUnavailable: the store cannot be reached; the task may or may not have been
                written (submitting again may then make a second task: use
                :meth:`schedule` with an id of your own where that matters).
        """
        spec = Task(task_type, new_task_id(), at, delay, payload, every, until)  # type: ignore[arg-type]
        store, new = await _prepare(self, spec)
        for draw in range(SUBMIT_TRIES):
            if draw:  # the id is taken: the same task under another
                new = new._replace(id=new_task_id())
            if not await store.schedule(task_type, (new,), only_new=True):
                return new.id
        raise StoreError(f"no free id for a new {task_type} task in {SUBMIT_TRIES} draws")

    async def schedule_many(self: ClientSide, tasks: Iterable[Task]) -> int:
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
        for n, spec in enumerate(specs):
            try:
                new = new_task(spec, now, self.max_payload_bytes)
            except ValidationError as exc:
                raise type(exc)(f"tasks[{n}].{exc.field}", exc.problem) from None
            by_type.setdefault(spec.task_type, []).append(new)
        for name, batch in by_type.items():
            await store.schedule(name, batch)
        return len(specs)


async def _prepare(client: ClientSide, spec: Task) -> tuple[Store, NewTask]:
    """Check one task (before any connection when it has ``at``) and open the store."""
    client.task_type(spec.task_type)
    if spec.at is not None:  # refused at the door, before any connection is made
        new = new_task(spec, None, client.max_payload_bytes)
        return await client.open(), new
    store = await client.open()
    return store, new_task(spec, client.clock.now_ms(), client.max_payload_bytes)
