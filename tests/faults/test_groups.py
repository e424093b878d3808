"""Fair groups across three real worker processes, on each store: with
``group_concurrency=1``, 100 tasks in group A and 3 each in B and C come due together; A
never runs two at once, and every task of B and C starts before A's tenth. Then a worker is
killed mid-run: its group's slot comes back when its lease lapses, and nothing is lost.
Times are the ledger's (each handler's start and end)."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

import duetime
from tests.faults.harness import Entry, Workers, counts, wall_ms
from tests.helpers import eventually

pytestmark = pytest.mark.slow


@pytest.fixture
async def producer(any_store_url: str, namespace: str) -> AsyncIterator[duetime.App]:
    app = duetime.App(any_store_url, namespace=namespace)
    app.declare("work")
    yield app
    await app.close()


def runs_of(ledger: list[Entry], prefix: str) -> list[tuple[float, float]]:
    """The (start, end) of each finished run of the tasks whose id starts with ``prefix``,
    by start."""
    ends = {(e.task_id, e.token): e.t_ms for e in ledger if e.kind == "effect"}
    starts = [e for e in ledger if e.kind == "start" and e.task_id.startswith(prefix)]
    return sorted((e.t_ms, ends.get((e.task_id, e.token), float("inf"))) for e in starts)


def one_at_a_time(runs: list[tuple[float, float]]) -> bool:
    return all(after[0] >= before[1] for before, after in zip(runs, runs[1:], strict=False))


async def test_a_busy_group_runs_one_at_a_time_and_the_small_groups_go_first(
    any_store_url: str, namespace: str, producer: duetime.App, workers: Workers
) -> None:
    due = datetime.now(UTC) - timedelta(seconds=5)
    tasks = [duetime.Task("work", f"A{i:03}", at=due, group="A") for i in range(100)]
    for group in "BC":
        tasks += [duetime.Task("work", f"{group}{i}", at=due, group=group) for i in range(3)]
    # Every worker is up before the tasks come, each able to run two at once (so a worker
    # could run two of a group, but not the three groups' tasks alone): the worker that
    # settles a task may win the next claim of its group every time, and with room for all
    # three groups the first worker up once ran every task on a loaded machine.
    started = [
        workers.start(
            any_store_url, namespace, concurrency=2, group_concurrency=1, mode="sleep:0.02"
        )
        for _ in range(3)
    ]
    for worker in started:
        worker.wait_ready()
    await producer.schedule_many(tasks)
    await eventually(
        lambda: len(counts(workers.ledger(), "effect")) == len(tasks), 60, "every task ran"
    )
    ledger = workers.ledger()
    assert {task_id: n for task_id, n in counts(ledger, "effect").items() if n != 1} == {}
    runs = {group: runs_of(ledger, group) for group in "ABC"}
    for group, group_runs in runs.items():
        assert one_at_a_time(group_runs), f"two tasks of group {group} ran at once"
    # No lost wake-up: the settle that frees the busy group's slot wakes a worker (one
    # missed shows as a gap of max_idle, 5 s, until a worker looks again on its own).
    gaps = [after[0] - before[1] for before, after in zip(runs["A"], runs["A"][1:], strict=False)]
    assert max(gaps) < 2500, max(gaps)
    tenth_a = runs["A"][9][0]
    assert max(start for group in "BC" for start, _ in runs[group]) < tenth_a
    assert len({e.pid for e in ledger}) >= 2  # the workers shared the work


async def test_a_killed_workers_group_slot_comes_back_after_its_lease(
    any_store_url: str, namespace: str, producer: duetime.App, workers: Workers
) -> None:
    due = datetime.now(UTC) - timedelta(seconds=1)
    await producer.schedule_many(
        duetime.Task(
            "work",
            f"K{i}",
            at=due + timedelta(milliseconds=i),
            group="K",
            payload={"sleep": 3 if i == 0 else 0},
        )
        for i in range(5)
    )
    options = {"concurrency": 4, "group_concurrency": 1, "lease": 3.0}
    doomed = workers.start(any_store_url, namespace, **options)
    doomed.wait_ready()
    await eventually(
        lambda: [e.task_id for e in workers.ledger() if e.kind == "start"] == ["K0"],
        20,
        "K0 started",
    )
    doomed.signal(signal.SIGKILL)
    killed = wall_ms()
    workers.start(any_store_url, namespace, **options).wait_ready()
    await asyncio.sleep(0.5)
    # The group's one slot is the dead worker's until its lease lapses.
    assert [e.task_id for e in workers.ledger() if e.kind == "start"] == ["K0"]
    await eventually(
        lambda: {"K0", "K1", "K2", "K3", "K4"} <= set(counts(workers.ledger(), "effect")),
        30,
        "the killed run again, and the rest of the group, once the lease lapsed",
    )
    assert runs_of(workers.ledger(), "K")[-1][1] < float("inf")
    assert one_at_a_time(runs_of(workers.ledger(), "K")[1:])  # the killed run never ended
    later = [e for e in workers.ledger() if e.kind == "start" and e.task_id != "K0"]
    # The lease, renewed every second, lapses two to three seconds after the kill (less if
    # a loaded machine renewed it late): not at once.
    assert min(e.t_ms for e in later) >= killed + 1000
