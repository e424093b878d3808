"""Partitions: one task type spread over several of a store's types, so that on Redis
Cluster its keys, claims and wake-ups land on several primaries.

A type of ``partitions=N`` (N > 1) lives in the store types ``<type>#0`` ...
``<type>#<N-1>`` (``#`` is never part of a type name), each with keys of their own hash tag.
A task's partition comes from its id: the CRC-32 of the id up to its first ``@``, modulo N.
So the ids a worker derives from a task's (a hand-off or a dead occurrence,
``"<id>@<ms>"``) stay in its partition, and ``schedule`` of the same id still moves it, as
``get`` and ``cancel`` find it. A claim asks every partition at once, the batch spread over
them from a partition that turns with each claim, so none is starved; the fencing tokens
it hands out carry their partition (``token * MAX_PARTITIONS + partition``), and the
settles and renewals that carry them go back to it (:mod:`duetime.worker.renewal`). A fence
(``raise_fence``) is raised in every partition, and a write under a token is checked in
each partition it writes to.
Types of one partition are passed through unchanged: today's layout.

The wrapper is store-neutral: every store keeps its own layout under it.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from duetime.errors import LeaseLost
from duetime.partitions.layout import (
    LAYOUT_TYPE,
    SEPARATOR,
    check_layout,
    part_name,
    partition_of,
    stored_partitions,
)
from duetime.partitions.leases import PartitionLeases
from duetime.stores.base import (
    STATES,
    AbortFound,
    NewTask,
    State,
    Store,
    StoredTask,
    WakeCallback,
)
from duetime.stores.capabilities import (
    CONDITIONAL,
    ENTRIES,
    GATES,
    KEY_EVENTS,
    RUN_HISTORY,
    use,
)
from duetime.stores.conditional import Answer, Condition
from duetime.stores.runs import StoredRun

T = TypeVar("T")


class PartitionedStore(PartitionLeases):
    """A :class:`~duetime.stores.base.Store` that spreads each type of more than one
    partition over that many of ``inner``'s types (see the module).

    Args:
        inner: the store.
        partitions_of: how many partitions a type has (1 for a type it does not know).
    """

    def __init__(self, inner: Store, partitions_of: Callable[[str], int]) -> None:
        self.inner = inner
        self._partitions_of = partitions_of
        self._turn = itertools.count()
        #: The types checked against the store's layout, with their partitions.
        self._counts: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # the calls about no type: open, close, time_ms, ...

    @property
    def url(self) -> str:
        return self.inner.url

    def copy(self) -> PartitionedStore:
        return PartitionedStore(self.inner.copy(), self._partitions_of)

    async def _n(self, task_type: str) -> int:
        """The type's partitions, once checked against what the store holds."""
        n = self._counts.get(task_type)
        if n is None:
            n = self._partitions_of(task_type)
            await check_layout(self.inner, task_type, n)
            self._counts[task_type] = n
        return n

    async def _each(self, task_type: str, n: int, call: Callable[[str], Any]) -> list[Any]:
        return list(await asyncio.gather(*(call(part_name(task_type, p)) for p in range(n))))

    async def _by_id(self, task_type: str, task_id: str) -> str:
        n = await self._n(task_type)
        return task_type if n == 1 else part_name(task_type, partition_of(task_id, n))

    # -- one task, by id --------------------------------------------------------------------

    async def cancel(self, task_type: str, task_id: str) -> bool:
        return await self.inner.cancel(await self._by_id(task_type, task_id), task_id)

    async def abort(self, task_type: str, task_id: str) -> AbortFound:
        return await self.inner.abort(await self._by_id(task_type, task_id), task_id)

    async def get(self, task_type: str, task_id: str) -> StoredTask | None:
        return await self.inner.get(await self._by_id(task_type, task_id), task_id)

    async def revive(
        self, task_type: str, task_id: str, due_ms: int, record: str | None = None
    ) -> bool:
        part = await self._by_id(task_type, task_id)
        return await self.inner.revive(part, task_id, due_ms, record)

    async def hasten(self, task_type: str, task_id: str, due_ms: int) -> bool | None:
        return await self.inner.hasten(await self._by_id(task_type, task_id), task_id, due_ms)

    async def remove_entry(self, task_type: str, task_id: str, now_ms: int) -> bool:
        part = await self._by_id(task_type, task_id)
        return await use(self.inner, ENTRIES).remove_entry(part, task_id, now_ms)

    async def schedule_event(
        self, task_type: str, event: str, task: NewTask, *, window_ms: int
    ) -> bool:
        part = await self._by_id(task_type, task.id)
        return await use(self.inner, KEY_EVENTS).schedule_event(
            part, event, task, window_ms=window_ms
        )

    # -- batches of tasks, spread by id ------------------------------------------------------

    async def _spread(
        self, task_type: str, items: Sequence[T], id_of: Callable[[T], str]
    ) -> dict[int, list[tuple[int, T]]] | None:
        """The items by partition, each with its place in ``items``; None when the type
        has one partition."""
        n = await self._n(task_type)
        if n == 1:
            return None
        groups: dict[int, list[tuple[int, T]]] = {}
        for place, item in enumerate(items):
            groups.setdefault(partition_of(id_of(item), n), []).append((place, item))
        return groups

    async def schedule(
        self,
        task_type: str,
        tasks: Sequence[NewTask],
        *,
        only_new: bool = False,
        fence: int | None = None,
    ) -> list[str]:
        inner = self.inner
        if self._counts.get(task_type) == 1:  # the producer's hot path: no more than this
            return await inner.schedule(task_type, tasks, only_new=only_new, fence=fence)
        groups = await self._spread(task_type, tasks, lambda t: t.id)
        if groups is None:
            return await inner.schedule(task_type, tasks, only_new=only_new, fence=fence)
        try:
            taken = await asyncio.gather(
                *(
                    inner.schedule(
                        part_name(task_type, p), [t for _, t in g], only_new=only_new, fence=fence
                    )
                    for p, g in groups.items()
                )
            )
        except LeaseLost as exc:  # named by the type, not by its partition
            raise LeaseLost(task_type, exc.token, exc.detail) from exc
        return [task_id for ids in taken for task_id in ids]

    async def schedule_if(
        self, task_type: str, tasks: Sequence[Condition], now_ms: int
    ) -> list[Answer]:
        """Each task written on its conditions in its partition, where what its id holds
        (its pending task, its finishes) lives."""
        inner = use(self.inner, CONDITIONAL)
        groups = await self._spread(task_type, tasks, lambda c: c.task.id)
        if groups is None:
            return await inner.schedule_if(task_type, tasks, now_ms)
        parts = list(groups.items())
        got = await asyncio.gather(
            *(
                inner.schedule_if(part_name(task_type, p), [c for _, c in g], now_ms)
                for p, g in parts
            )
        )
        answers: list[Answer | None] = [None] * len(tasks)
        for (_, group), part_answers in zip(parts, got, strict=True):
            for (place, _), answer in zip(group, part_answers, strict=True):
                answers[place] = answer
        return [a for a in answers if a is not None]

    async def raise_fence(self, task_type: str, token: int) -> bool:
        """Raise the fence of every partition (the token is not a token of the type's own,
        so it is passed as it is); whether none was above it."""
        n = await self._n(task_type)
        if n == 1:
            return await self.inner.raise_fence(task_type, token)
        raised = await self._each(task_type, n, lambda part: self.inner.raise_fence(part, token))
        return all(raised)

    async def put_entry(
        self, task_type: str, entries: Sequence[NewTask], *, keep_ttl: bool, now_ms: int
    ) -> list[int]:
        inner = use(self.inner, ENTRIES)
        groups = await self._spread(task_type, entries, lambda t: t.id)
        if groups is None:
            return await inner.put_entry(task_type, entries, keep_ttl=keep_ttl, now_ms=now_ms)
        dues = [0] * len(entries)
        for p, group in groups.items():
            part = part_name(task_type, p)
            got = await inner.put_entry(
                part, [e for _, e in group], keep_ttl=keep_ttl, now_ms=now_ms
            )
            for (place, _), due in zip(group, got, strict=True):
                dues[place] = due
        return dues

    # -- reads over every partition ----------------------------------------------------------

    async def list_tasks(
        self, task_type: str, state: State, limit: int, offset: int = 0
    ) -> list[StoredTask]:
        n = await self._n(task_type)
        if n == 1:
            return await self.inner.list_tasks(task_type, state, limit, offset)
        parts = await self._each(
            task_type, n, lambda part: self.inner.list_tasks(part, state, offset + limit, 0)
        )
        merged = heapq.merge(*parts, key=lambda t: (t.score_ms, t.id))
        return list(itertools.islice(merged, offset, offset + limit))

    async def count(self, task_type: str) -> dict[State, int]:
        n = await self._n(task_type)
        if n == 1:
            return await self.inner.count(task_type)
        parts = await self._each(task_type, n, self.inner.count)
        return {state: sum(part[state] for part in parts) for state in STATES}

    async def active_ids(self, task_type: str, limit: int) -> list[str]:
        n = await self._n(task_type)
        if n == 1:
            return await self.inner.active_ids(task_type, limit)
        parts = await self._each(task_type, n, lambda part: self.inner.active_ids(part, limit))
        return [task_id for ids in parts for task_id in ids][:limit]

    async def runs(
        self,
        task_type: str,
        *,
        task_id: str | None = None,
        limit: int,
        since_ms: int | None = None,
    ) -> list[StoredRun]:
        """The type's newest runs: of the partition of ``task_id`` if given, else of every
        partition, merged newest first."""
        inner = use(self.inner, RUN_HISTORY)
        n = await self._n(task_type)
        if n == 1 or task_id is not None:
            part = task_type if task_id is None else await self._by_id(task_type, task_id)
            return await inner.runs(part, task_id=task_id, limit=limit, since_ms=since_ms)
        parts = await self._each(
            task_type, n, lambda part: inner.runs(part, limit=limit, since_ms=since_ms)
        )
        merged = heapq.merge(*parts, key=lambda r: -r.finished_ms)
        return list(itertools.islice(merged, limit))

    async def task_types(self) -> list[str]:
        """The types holding a task, each partitioned one once; not ``duetime.layout``."""
        found = {_type_of(part) for part in await self.inner.task_types()}
        found.discard(LAYOUT_TYPE)
        return sorted(found)

    # -- gates ------------------------------------------------------------------------------

    async def _parts(self, task_type: str) -> list[str]:
        """Every store type a type's gates live in: the type itself, and its partitions,
        as this process declares them or, for a type it does not know, as stored."""
        n = self._partitions_of(task_type)
        n = await self._n(task_type) if n > 1 else await stored_partitions(self.inner, task_type)
        return [task_type, *(part_name(task_type, p) for p in range(n) if n > 1)]

    async def set_paused(self, task_type: str, paused: bool) -> bool:
        """Pause or resume every partition (each wakes its workers); whether any changed."""
        gates = use(self.inner, GATES)
        parts = await self._parts(task_type)
        changed = await asyncio.gather(*(gates.set_paused(part, paused) for part in parts))
        return any(changed)

    async def paused_types(self) -> list[str]:
        """The paused types, each partitioned one once."""
        return sorted({_type_of(part) for part in await use(self.inner, GATES).paused_types()})

    async def hold(self, task_type: str, until_ms: int) -> None:
        gates = use(self.inner, GATES)
        await asyncio.gather(*(gates.hold(part, until_ms) for part in await self._parts(task_type)))

    async def listen(self, on_wake: WakeCallback) -> None:
        await self.inner.listen(lambda task_type, due_ms: on_wake(_type_of(task_type), due_ms))


def _type_of(store_type: str) -> str:
    """The task type a store type belongs to: ``<type>#<n>`` is a partition of ``<type>``."""
    base, sep, number = store_type.rpartition(SEPARATOR)
    return base if sep and number.isdigit() else store_type


async def open_partitioned(store: Store, partitions_of: Callable[[str], int]) -> Store:
    """``store`` opened, and wrapped to spread each type over its partitions."""
    await store.open()
    return PartitionedStore(store, partitions_of)
