"""Priorities across a real worker process, on each store: 200 tasks of five priorities
come due while their type is paused; once resumed, one worker of concurrency 1 starts them
in priority order, then due order. Times are the ledger's (each handler's start)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

import duetime
from tests.faults.harness import Workers, counts, wall_ms
from tests.helpers import eventually

pytestmark = pytest.mark.slow

LEVELS = (100, 20, 0, -5, -100)
PER_LEVEL = 40


@pytest.fixture
async def producer(any_store_url: str, namespace: str) -> AsyncIterator[duetime.App]:
    app = duetime.App(any_store_url, namespace=namespace)
    app.declare("work")
    yield app
    await app.close()


async def test_a_resumed_worker_starts_due_tasks_by_priority_then_due_time(
    any_store_url: str, namespace: str, producer: duetime.App, workers: Workers
) -> None:
    await producer.pause("work")
    base = datetime.now(UTC) - timedelta(minutes=5)
    rng = random.Random(24)
    offsets = rng.sample(range(10_000), len(LEVELS) * PER_LEVEL)  # distinct due times
    tasks = [
        duetime.Task(
            "work",
            f"p{priority}-{n}",
            at=base + timedelta(milliseconds=offsets[k * PER_LEVEL + n]),
            priority=priority,
        )
        for k, priority in enumerate(LEVELS)
        for n in range(PER_LEVEL)
    ]
    rng.shuffle(tasks)  # written in no particular order, in two batches and one by one
    await producer.schedule_many(tasks[:100])
    for task in tasks[100:110]:
        await producer.schedule(task.task_type, task.task_id, at=task.at, priority=task.priority)
    await producer.schedule_many(tasks[110:])

    worker = workers.start(any_store_url, namespace, concurrency=1)
    worker.wait_ready()
    await asyncio.sleep(1.0)  # due, but paused: nothing starts
    assert [e for e in workers.ledger() if e.kind == "start"] == []
    resumed = wall_ms()
    await producer.resume("work")
    await eventually(
        lambda: len(counts(workers.ledger(), "effect")) == len(tasks), 30, "every task ran"
    )

    starts = sorted((e for e in workers.ledger() if e.kind == "start"), key=lambda e: e.t_ms)
    assert len(starts) == len(tasks) and min(e.t_ms for e in starts) >= resumed
    expected = sorted(tasks, key=lambda t: (-(t.priority or 0), t.at))
    assert [e.task_id for e in starts] == [t.task_id for t in expected]
    # one at a time: each started after the one before ended
    effects = {e.task_id: e.t_ms for e in workers.ledger() if e.kind == "effect"}
    for before, after in zip(starts, starts[1:], strict=False):
        assert effects[before.task_id] <= after.t_ms
