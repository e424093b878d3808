"""Small helpers shared by the tests."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import duetime
from duetime.record import Record
from duetime.stores.base import NewTask, Outcome, Store
from duetime.triggers.periodic import Periodic


@contextlib.asynccontextmanager
async def running(
    app: duetime.App, *, paused: Sequence[str] = (), **options: Any
) -> AsyncIterator[duetime.Worker]:
    """A worker running in this event loop for the duration of the block, with the
    ``paused`` types paused from the start."""
    worker = app.worker(**options)
    for task_type in paused:
        worker.pause(task_type)
    task = asyncio.create_task(worker.run())
    await asyncio.wait_for(worker.started.wait(), 10)
    try:
        yield worker
    finally:
        worker.stop()
        await asyncio.wait_for(task, 30)


async def eventually(
    check: Callable[[], bool | Awaitable[bool]],
    within: float = 5.0,
    what: str = "condition",
    every: float = 0.01,
) -> float:
    """Wait until ``check()`` (sync or async) is true, and return the seconds it took; fail
    naming ``what`` after ``within`` seconds."""
    start = time.monotonic()
    while True:
        result = check()
        if not isinstance(result, bool):
            result = await result
        if result:
            return time.monotonic() - start
        if time.monotonic() - start > within:
            raise AssertionError(f"{what} not met within {within} s")
        await asyncio.sleep(every)


class ClaimSpy:
    """Counts the claims a real store answers, per task type: the store still does every
    claim (its method is wrapped on this one object, nothing is mocked). A test waits for
    "the worker claimed since" rather than sleeping as long as it hopes that takes:
    ``mark = spy.mark("t")`` before the action, ``await spy.since(mark)`` after it."""

    def __init__(self, store: Store) -> None:
        self._begun: dict[str, int] = {}
        self._answered: dict[str, int] = {}  # the latest claim answered, by its number
        real = store.claim

        async def claim(task_type: str, **options: Any) -> Any:
            number = self._begun[task_type] = self._begun.get(task_type, 0) + 1
            batch = await real(task_type, **options)
            self._answered[task_type] = max(self._answered.get(task_type, 0), number)
            return batch

        store.claim = claim  # type: ignore[method-assign]

    def mark(self, task_type: str) -> tuple[str, int]:
        """Where the claims of the type are now."""
        return task_type, self._begun.get(task_type, 0)

    async def since(self, mark: tuple[str, int], within: float = 25.0) -> None:
        """Until a claim of the type begun after ``mark`` has been answered."""
        task_type, begun = mark
        await eventually(
            lambda: self._answered.get(task_type, 0) > begun, within, f"a claim of {task_type}"
        )


def record_text(
    payload_json: str = "{}",
    *,
    every_ms: int | None = None,
    occurrence_ms: int | None = None,
    failures: int = 0,
) -> str:
    """A task's record as duetime stores it."""
    trigger = None if every_ms is None else Periodic(every_ms)
    return Record(payload_json, trigger, occurrence_ms, failures).encode()


async def has_state(app: duetime.App, task_type: str, task_id: str, state: str) -> bool:
    """Whether the task exists in ``state``."""
    info = await app.get(task_type, task_id)
    return info is not None and info.state == state


async def is_gone(app: duetime.App, task_type: str, task_id: str) -> bool:
    """Whether no task has this id any more."""
    return await app.get(task_type, task_id) is None


async def count_is(app: duetime.App, task_type: str, state: str, n: int) -> bool:
    """Whether ``n`` tasks of the type are in ``state``."""
    return (await app.counts(task_type))[state] == n  # type: ignore[index]


async def make_dead(app: duetime.App, task_type: str, n: int, *, prefix: str = "d") -> None:
    """``n`` dead tasks of the type, ids ``<prefix><k>``, killed as a worker kills a task
    whose handler failed its last attempt: claimed, then settled as dead (one call per 500,
    where a worker running a failing handler would take seconds for thousands)."""
    await app.schedule_many(duetime.Task(task_type, f"{prefix}{k}") for k in range(n))
    store = await app.open()
    killed = 0
    while killed < n:
        batch = await store.claim(
            task_type,
            now_ms=await app.now_ms(),
            limit=500,
            lease_ms=60_000,
            max_stalls=0,
            at_most_once=False,
        )
        assert batch.claims, f"only {killed} of {n} tasks could be claimed"
        outcomes = [
            Outcome("dead", c, record=c.record, error="RuntimeError: refused") for c in batch.claims
        ]
        assert all(await store.settle(task_type, outcomes, await app.now_ms()))
        killed += len(batch.claims)


async def file_occurrence(app: duetime.App, task_type: str, task_id: str) -> str:
    """The periodic task ``task_id``, its occurrence failed for good as a worker files it:
    ``"<id>@<due ms>"`` in the dead letters, the series due again. Returns the dead id."""
    store: Store = await app.open()
    now = await app.now_ms()
    await store.schedule(task_type, [NewTask(task_id, now, record_text(every_ms=3_600_000))])
    (claim,) = (
        await store.claim(
            task_type, now_ms=now, limit=1, lease_ms=60_000, max_stalls=0, at_most_once=False
        )
    ).claims
    dead_id = f"{task_id}@{claim.due_ms}"
    filed = record_text(occurrence_ms=claim.due_ms, failures=1)
    series = record_text(every_ms=3_600_000)
    outcome = Outcome("next", claim, now + 3_600_000, series, "boom", dead_id, filed)
    assert await store.settle(task_type, [outcome], now) == [True]
    return dead_id


async def file_bad_id(app: duetime.App, task_type: str, task_id: str) -> None:
    """A dead task whose id no call takes, as another program may write one."""
    store: Store = await app.open()
    now = await app.now_ms()
    await store.schedule(task_type, [NewTask(task_id, now, record_text())])
    batch = await store.claim(
        task_type, now_ms=now, limit=1, lease_ms=60_000, max_stalls=0, at_most_once=False
    )
    dead = [Outcome("dead", c, record=c.record, error="refused") for c in batch.claims]
    assert await store.settle(task_type, dead, now) == [True]
