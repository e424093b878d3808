"""Runs started a claim's batch at a time (worker/eager.py): each handler still behaves as
if it ran in an asyncio task of its own. On a real SQLite file and a real Redis."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import duetime
from duetime.stores.values import new_claim
from duetime.worker.eager import Starter
from duetime.worker.run import Run
from tests.helpers import eventually, running
from tests.servers import RedisServer

SEEN: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="")


@pytest.fixture(params=["sqlite", "redis"])
async def app(
    request: pytest.FixtureRequest, tmp_path: Path, namespace: str
) -> AsyncIterator[duetime.App]:
    if request.param == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        url = server.url
    else:
        url = f"sqlite:///{tmp_path / 'eager.db'}"
    app = duetime.App(url, namespace=namespace)
    await app.open()
    yield app
    await app.close()


async def schedule_due(app: duetime.App, task_type: str, n: int) -> None:
    """``n`` tasks due now, so that one claim brings them all."""
    await app.schedule_many(duetime.Task(task_type, f"t{i}", payload={"i": i}) for i in range(n))


async def test_each_handler_of_a_batch_has_its_own_context_variables(app: duetime.App) -> None:
    seen: dict[int, tuple[str, str]] = {}

    @app.task("ctx", concurrency=50)
    async def handler(payload: dict[str, Any]) -> None:
        before = SEEN.get()  # what an earlier handler of the batch set must not show
        SEEN.set(f"run {payload['i']}")
        if payload["i"] % 2:
            await asyncio.sleep(0.01)  # waits: goes on in the task that ran its start
        seen[payload["i"]] = (before, SEEN.get())

    await schedule_due(app, "ctx", 20)
    async with running(app):
        await eventually(lambda: len(seen) == 20)
    assert seen == {i: ("", f"run {i}") for i in range(20)}


async def test_a_timeout_a_handler_enters_before_it_waits_cuts_that_handler_alone(
    app: duetime.App,
) -> None:
    """asyncio.timeout() takes the current task as the handler enters it: that must be the
    task that then runs the handler while it waits, not one shared with the rest."""
    ended: dict[int, str] = {}
    tasks: dict[int, asyncio.Task[Any] | None] = {}

    @app.task("limited", concurrency=50)
    async def handler(payload: dict[str, Any]) -> None:
        i = payload["i"]
        tasks[i] = asyncio.current_task()
        try:
            async with asyncio.timeout(0.05 if i == 0 else 5):
                await asyncio.sleep(0.2 if i == 0 else 0.3)
        except TimeoutError:
            ended[i] = "timed out"
        else:
            ended[i] = "slept"

    await schedule_due(app, "limited", 10)
    async with running(app):
        await eventually(lambda: len(ended) == 10)
        assert ended == {0: "timed out", **dict.fromkeys(range(1, 10), "slept")}
        # Every handler that waited had a task of its own.
        assert len({id(task) for task in tasks.values()}) == 10
        # And the worker still claims and runs what comes next.
        await app.schedule("limited", "later", payload={"i": 99})
        await eventually(lambda: 99 in ended)


async def test_the_rest_of_a_batch_starts_while_an_earlier_handler_waits(
    app: duetime.App,
) -> None:
    last_started = asyncio.Event()
    done: list[int] = []

    @app.task("waits", concurrency=50)
    async def handler(payload: dict[str, Any]) -> None:
        if payload["i"] == 0:
            await asyncio.wait_for(last_started.wait(), 5)  # the first waits for the last
        if payload["i"] == 9:
            last_started.set()
        done.append(payload["i"])

    await schedule_due(app, "waits", 10)
    async with running(app):
        await eventually(lambda: len(done) == 10)
    assert done[-1] == 0 and sorted(done) == list(range(10))


async def test_a_handler_raising_cancelled_error_ends_alone(app: duetime.App) -> None:
    ran: list[int] = []

    @app.task("cancels", concurrency=50)
    async def handler(payload: dict[str, Any]) -> None:
        ran.append(payload["i"])
        if payload["i"] == 2:
            raise asyncio.CancelledError  # as if cut short: handed back, run again

    await schedule_due(app, "cancels", 6)
    async with running(app):
        await eventually(lambda: set(ran) == set(range(6)))
        await eventually(lambda: ran.count(2) >= 2, what="the handed-back task runs again")
    assert all(ran.count(i) == 1 for i in (0, 1, 3, 4, 5))


async def test_a_batch_cancelled_before_it_starts_hands_back_every_run() -> None:
    handed: list[int] = []
    started: list[int] = []

    async def execute(run: Run) -> None:
        started.append(run.claim.token)

    starter = Starter(execute, lambda run: handed.append(run.claim.token))
    runs = [Run(new_claim(f"t{i}", i, 0, 0, '{"p":{}}')) for i in range(5)]
    starter.start(asyncio.get_running_loop(), runs)
    (task,) = starter.tasks
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert (started, handed, starter.tasks) == ([], [0, 1, 2, 3, 4], set())


async def test_a_batch_split_by_a_waiting_run_hands_back_only_its_own() -> None:
    """Cancelling the batch that a waiting run kept reaches that run's coroutine; the runs
    after it went on in another task and are not handed back twice."""
    handed: list[int] = []
    finished: list[int] = []
    gate = asyncio.Event()

    async def execute(run: Run) -> None:
        if run.claim.token == 1:
            try:
                await gate.wait()
            except asyncio.CancelledError:
                handed.append(1)  # as the runner hands back a run cut short
                raise
        finished.append(run.claim.token)

    starter = Starter(execute, lambda run: handed.append(run.claim.token))
    runs = [Run(new_claim(f"t{i}", i, 0, 0, '{"p":{}}')) for i in range(4)]
    starter.start(asyncio.get_running_loop(), runs)
    await eventually(lambda: finished == [0, 2, 3])
    assert runs[1].task is not None and runs[1].task in starter.tasks
    runs[1].task.cancel()
    await asyncio.gather(*starter.tasks, return_exceptions=True)
    assert (finished, handed, starter.tasks) == ([0, 2, 3], [1], set())
