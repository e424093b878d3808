"""Triggers kept in the store under a name: declared in code or added at run time.

A named trigger (a cron schedule) is a task of the
type it runs, whose id is its name and whose record carries the trigger. So it survives
restarts with the store, one worker at a time holds it (once per tick), and it lives in its
type's keys. A namespace-wide index maps names to task types, so that a name is unique and
found by name alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Container
from typing import Any, NamedTuple, Protocol, runtime_checkable

from duetime.errors import ScheduleNotFound, SchemaError, ValidationError
from duetime.record import Record
from duetime.stores.base import NewTask, Store, StoredTask
from duetime.stores.capabilities import SCHEDULE_NAMES, ScheduleNames, use
from duetime.triggers.base import Next, Trigger
from duetime.validate import check_id


@runtime_checkable
class NamedTrigger(Trigger, Protocol):
    """A trigger kind that can live under a name."""

    @property
    def paused(self) -> bool: ...

    def definition(self) -> tuple[object, ...]:
        """What its user declared: equal definitions mean the same trigger."""
        ...

    def carried_from(self, old: Any, waiting: bool = True) -> NamedTrigger:
        """This definition with the run-time state (paused, counters) of ``old``, a trigger
        of the same kind; ``waiting``: whether ``old``'s task waits (it is not running)."""
        ...

    def start(self, payload_json: str, now_ms: int, immediately: bool = False) -> Next:
        """Its first occurrence after ``now_ms`` (never, while paused); with
        ``immediately``, one at once first."""
        ...


class Declared(NamedTuple):
    """A named trigger as code declares it.

    Attributes:
        immediately: when the store first gets it, it runs once at once, then as it says.
    """

    name: str
    task_type: str
    trigger: NamedTrigger
    payload_json: str
    immediately: bool = False


class Stored(NamedTuple):
    """A named trigger as the store holds it."""

    name: str
    task_type: str
    task: StoredTask
    record: Record
    trigger: NamedTrigger


class NamedTriggers:
    """The named triggers of one app: those its code declares, and those in its store.

    Args:
        open_store: opens the app's store (once) and returns it.
        now_ms: the store's time now.
    """

    def __init__(
        self,
        open_store: Callable[[], Awaitable[Store]],
        now_ms: Callable[[], Awaitable[int]],
    ) -> None:
        self._open = open_store
        self._now_ms = now_ms
        self.declared: dict[str, Declared] = {}

    def bound(
        self,
        open_store: Callable[[], Awaitable[Store]],
        now_ms: Callable[[], Awaitable[int]],
    ) -> NamedTriggers:
        """The same declared triggers (shared: one declared later is seen by both), on
        another store connection."""
        other = NamedTriggers(open_store, now_ms)
        other.declared = self.declared
        return other

    async def _names(self) -> ScheduleNames:
        return use(await self._open(), SCHEDULE_NAMES)

    def declare(self, declared: Declared) -> None:
        """Remember a trigger the code declares; a worker writes it when it starts."""
        other = self.declared.get(declared.name)
        if other is not None and other.task_type != declared.task_type:
            raise ValidationError(
                "name", f"schedule {declared.name!r} already runs {other.task_type!r}"
            )
        self.declared[declared.name] = declared

    async def upsert(self, declared: Declared) -> bool:
        """Write a trigger unless the store holds it with the same definition and payload.

        Returns whether it was written. A changed trigger starts again from its next
        occurrence; its run-time state (paused, counters) is kept.

        Raises:
            ValidationError: the name belongs to a trigger of another task type.
        """
        store = await self._open()
        owner = await (await self._names()).add_schedule_name(declared.name, declared.task_type)
        if owner != declared.task_type:
            raise ValidationError(
                "name", f"schedule {declared.name!r} belongs to task type {owner!r}"
            )
        task = await store.get(declared.task_type, declared.name)
        trigger = declared.trigger
        found = _read(task)
        if found is not None and type(found[1]) is type(trigger):
            old, old_trigger = found
            same = old_trigger.definition() == trigger.definition()
            if same and old.payload_json == declared.payload_json:
                return False
            trigger = trigger.carried_from(old_trigger, task is not None and task.state == "due")
        # Never seen: write it only if no other process did meanwhile, so that a tick is
        # not written twice by workers starting together. Its immediate run rides in that
        # first write: once, whichever process makes it, and never again.
        first = task is None
        nxt = trigger.start(
            declared.payload_json, await self._now_ms(), declared.immediately and first
        )
        new = NewTask(declared.name, nxt.due_ms, Record.following(nxt).encode())
        await store.schedule(declared.task_type, [new], only_new=first)
        return True

    async def write_declared(self, only: Container[str] | None = None) -> None:
        """Write every trigger the code declares (of the task types in ``only``, if given):
        what a worker does as it starts."""
        for declared in self.declared.values():
            if only is None or declared.task_type in only:
                await self.upsert(declared)

    async def locate(self, name: str) -> tuple[str, StoredTask | None]:
        """The task type of the trigger ``name``, and its stored task (None if not stored).

        Raises:
            ScheduleNotFound: it is neither in the store nor declared.
        """
        check_id(name, "name", stored=True)  # a lookup: any name the store may hold
        store = await self._open()
        task_type = (await (await self._names()).schedule_names()).get(name)
        if task_type is None:
            declared = self.declared.get(name)
            if declared is None:
                raise ScheduleNotFound(name)
            return declared.task_type, None
        return task_type, await store.get(task_type, name)

    async def stored(self, name: str) -> Stored:
        """The trigger ``name`` as the store holds it.

        Raises:
            ScheduleNotFound: it is not in the store, or its record is unreadable.
        """
        task_type, task = await self.locate(name)
        found = _read(task)
        if task is None or found is None:
            raise ScheduleNotFound(name)
        return Stored(name, task_type, task, *found)

    async def rewrite(self, stored: Stored, trigger: NamedTrigger) -> None:
        """Write ``stored`` again with ``trigger`` (paused or resumed, say), due anew."""
        nxt = trigger.start(stored.record.payload_json, await self._now_ms())
        store = await self._open()
        new = NewTask(stored.name, nxt.due_ms, Record.following(nxt).encode())
        await store.schedule(stored.task_type, [new])

    async def hand_off(self, name: str, occurrence_ms: int, due_ms: int) -> str:
        """Write the occurrence at ``occurrence_ms`` of the trigger ``name`` as a task of its
        own, due at ``due_ms``, with the trigger's payload, under ``"<name>@<occurrence
        ms>"``: what a worker writes for a cron tick with overlap "allow". A task of that
        id already in the store (due, running or dead) is left as it is. Returns its id.

        Raises:
            ScheduleNotFound: it is neither in the store (readable) nor declared.
        """
        task_type, task = await self.locate(name)
        found = _read(task)
        declared = self.declared.get(name)
        if found is not None:
            payload_json = found[0].payload_json
        elif declared is not None and declared.task_type == task_type:
            payload_json = declared.payload_json
        else:
            raise ScheduleNotFound(name)
        task_id = f"{name}@{occurrence_ms}"
        record = Record(payload_json, None, occurrence_ms).encode()
        store = await self._open()
        await store.schedule(task_type, [NewTask(task_id, due_ms, record)], only_new=True)
        return task_id

    async def remove(self, name: str) -> bool:
        """Remove the trigger ``name`` and its name; whether a task was there."""
        task_type, _ = await self.locate(name)
        store = await self._open()
        removed = await store.cancel(task_type, name)
        await (await self._names()).remove_schedule_name(name)
        return removed

    async def names(self) -> dict[str, str]:
        """Every name in the store's index, with the task type it belongs to."""
        return await (await self._names()).schedule_names()

    async def all_stored(self) -> list[Stored]:
        """Every readable named trigger in the store, by name."""
        store = await self._open()
        out = []
        for name, task_type in sorted((await (await self._names()).schedule_names()).items()):
            task = await store.get(task_type, name)
            found = _read(task)
            if task is not None and found is not None:
                out.append(Stored(name, task_type, task, *found))
        return out


def _read(task: StoredTask | None) -> tuple[Record, NamedTrigger] | None:
    """The record of a stored named trigger, and its trigger; None when there is none, it
    cannot be read or it carries no named trigger."""
    if task is None or task.record is None:
        return None
    try:
        record = Record.decode(task.record)
    except SchemaError:
        return None
    trigger = record.trigger
    return (record, trigger) if isinstance(trigger, NamedTrigger) else None
