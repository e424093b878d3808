"""A worker tells its listeners what happens to its tasks, on every store."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from datetime import timedelta
from typing import Any

import pytest

import duetime
from duetime.record import Record
from duetime.stores.base import NewTask
from duetime.triggers.cron.expression import parse_cron
from tests.helpers import eventually, is_gone, running

FAST = duetime.Backoff(base=timedelta(milliseconds=20), jitter=0)


class Recorder(duetime.Listener):
    """Keeps every event it is given."""

    def __init__(self) -> None:
        self.events: list[duetime.WorkerEvent] = []

    def claimed(self, event: duetime.WorkerEvent) -> None:
        self.events.append(event)

    def started(self, event: duetime.WorkerEvent) -> None:
        self.events.append(event)

    def succeeded(self, event: duetime.WorkerEvent) -> None:
        self.events.append(event)

    def failed(self, event: duetime.WorkerEvent) -> None:
        self.events.append(event)

    def retried(self, event: duetime.WorkerEvent) -> None:
        self.events.append(event)

    def dead_lettered(self, event: duetime.WorkerEvent) -> None:
        self.events.append(event)

    def missed_ticks(self, event: duetime.WorkerEvent) -> None:
        self.events.append(event)

    def of(self, task_id: str) -> list[duetime.WorkerEvent]:
        return [e for e in self.events if e.task_id == task_id]


async def test_a_task_that_succeeds_is_claimed_started_and_succeeds(app: duetime.App) -> None:
    @app.task("slow")
    async def slow(payload: dict[str, Any]) -> None:
        await asyncio.sleep(0.05)

    recorder = Recorder()
    async with running(app, listeners=[recorder]):
        due = await app.schedule("slow", "s1", delay=timedelta(milliseconds=100))
        await eventually(lambda: len(recorder.of("s1")) == 3)

    claimed, started, succeeded = recorder.of("s1")
    due_ms = int(due.timestamp() * 1000)
    assert [e.kind for e in (claimed, started, succeeded)] == ["claimed", "started", "succeeded"]
    assert all((e.task_type, e.due_ms) == ("slow", due_ms) for e in (claimed, started, succeeded))
    assert (started.attempt, succeeded.attempt) == (1, 1)
    # Never early; the bound only catches a count in another unit (µs would read far off).
    assert started.lateness_ms is not None and 0 <= started.lateness_ms < 60_000
    assert succeeded.duration_ms is not None and succeeded.duration_ms >= 50
    assert succeeded.error is None


async def test_failures_are_told_with_their_retry_and_their_dead_letter(
    app: duetime.App,
) -> None:
    @app.task("flaky", retries=1, backoff=FAST)
    async def flaky(payload: dict[str, Any]) -> None:
        raise ValueError("boom")

    recorder = Recorder()
    async with running(app, listeners=[recorder]):
        await app.schedule("flaky", "f1")
        await eventually(lambda: any(e.kind == "dead_lettered" for e in recorder.of("f1")))

    kinds = [(e.kind, e.attempt) for e in recorder.of("f1") if e.kind != "claimed"]
    assert kinds == [
        ("started", 1),
        ("failed", 1),
        ("retried", 1),
        ("started", 2),
        ("failed", 2),
        ("dead_lettered", 2),
    ]
    failed = [e for e in recorder.of("f1") if e.kind in ("failed", "retried", "dead_lettered")]
    assert {e.error for e in failed} == {"ValueError: boom"}
    retried = next(e for e in recorder.of("f1") if e.kind == "retried")
    second = [e for e in recorder.of("f1") if e.kind == "started"][1]
    assert second.due_ms == retried.due_ms  # the retry ran at the time it was told


async def test_ticks_missed_while_no_worker_ran_are_told_with_their_count(
    app: duetime.App,
) -> None:
    @app.task("yearly")
    async def yearly(payload: dict[str, Any], ctx: duetime.Context) -> None: ...

    await app.add_cron("newYear", "0 0 1 1 *", task="yearly", missed="skip")
    now = await app.now_ms()
    ticks = parse_cron("0 0 1 1 *").ticks_until(now - 3 * 366 * 86_400_000, now, 10)[-3:]
    store = await app.open()
    _, stored = await app.named_triggers.locate("newYear")
    assert stored is not None and stored.record is not None
    rewound = dataclasses.replace(Record.decode(stored.record), occurrence_ms=ticks[0])
    await store.schedule("yearly", [NewTask("newYear", ticks[0], rewound.encode())])

    recorder = Recorder()
    async with running(app, listeners=[recorder]):
        await eventually(lambda: any(e.kind == "missed_ticks" for e in recorder.events))

    (missed,) = [e for e in recorder.events if e.kind == "missed_ticks"]
    assert (missed.task_type, missed.task_id, missed.count) == ("yearly", "newYear", 3)
    assert missed.due_ms == ticks[-1]


async def test_a_listener_that_raises_is_logged_and_the_worker_goes_on(
    app: duetime.App, caplog: pytest.LogCaptureFixture
) -> None:
    ran: list[str] = []

    class Broken(duetime.Listener):
        def started(self, event: duetime.WorkerEvent) -> None:
            raise RuntimeError("listener bug")

    @app.task("job")
    async def job(payload: dict[str, Any]) -> None:
        ran.append("job")

    with caplog.at_level(logging.ERROR, logger="duetime.worker"):
        async with running(app, listeners=[Broken()]):
            await app.schedule("job", "j1")
            await eventually(lambda: ran == ["job"])
            await eventually(lambda: is_gone(app, "job", "j1"))

    assert any("listener" in r.getMessage() and r.exc_info for r in caplog.records)


def test_a_listener_must_be_a_listener() -> None:
    app = duetime.App("redis://localhost:1/0")

    @app.task("job")
    async def job(payload: dict[str, Any]) -> None: ...

    with pytest.raises(TypeError, match="duetime.Listener"):
        app.worker(listeners=[object()])


async def test_a_task_whose_data_cannot_be_used_is_told_as_dead_lettered(
    app: duetime.App, store: duetime.stores.base.Store
) -> None:
    @app.task("job")
    async def job(payload: dict[str, Any]) -> None: ...

    await store.schedule("job", [NewTask("broken", await app.now_ms(), '{"p":{},"e":0}')])
    recorder = Recorder()
    async with running(app, listeners=[recorder]):
        await eventually(lambda: any(e.kind == "dead_lettered" for e in recorder.events))

    kinds = [e.kind for e in recorder.of("broken")]
    assert kinds == ["claimed", "dead_lettered"]  # it never started
    dead = recorder.of("broken")[1]
    assert dead.task_type == "job"
    assert dead.error is not None and dead.error.startswith("corrupt record")
