"""Aborting a running handler on each store: found through the store, cancelled on its
signal, its cleanup given the grace, not retried; a task not running is cancelled."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta
from typing import Any

import duetime
from duetime.partitions.layout import partition_of
from duetime.stores.base import ABORT_WAKE_MS, NewTask
from tests.helpers import count_is, eventually, record_text, running


class Heard(duetime.Listener):
    """The runs aborted and the failures heard by a worker."""

    def __init__(self) -> None:
        self.aborts: list[duetime.WorkerEvent] = []
        self.retries: list[duetime.WorkerEvent] = []
        self.dead: list[duetime.WorkerEvent] = []

    def aborted(self, event: duetime.WorkerEvent) -> None:
        self.aborts.append(event)

    def retried(self, event: duetime.WorkerEvent) -> None:
        self.retries.append(event)

    def dead_lettered(self, event: duetime.WorkerEvent) -> None:
        self.dead.append(event)


async def test_a_running_async_handler_is_cancelled_on_the_abort_signal_and_not_retried(
    app: duetime.App,
) -> None:
    started = asyncio.Event()
    cleaned = asyncio.Event()

    # A lease of an hour: the backstop (a look every third of the lease) is 20 minutes away,
    # so only the abort's signal can reach the worker in time.
    @app.task("slow", retries=3, lease=3600)
    async def slow(payload: dict[str, Any]) -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cleaned.set()
            raise

    heard = Heard()
    await app.schedule("slow", "s1")
    async with running(app, listeners=[heard]):
        await asyncio.wait_for(started.wait(), 25)
        assert await app.abort("slow", "s1") == "aborted"
        await asyncio.wait_for(cleaned.wait(), 25)
        await eventually(lambda: _gone(app, "slow", "s1"), within=25, what="the task ends")
    # Settled (the one moment a retry could have been scheduled), the worker stopped.
    assert await app.counts("slow") == {"due": 0, "running": 0, "dead": 0}
    assert [e.task_id for e in heard.aborts] == ["s1"]
    assert "abort" in (heard.aborts[0].error or "")
    assert heard.retries == [] and heard.dead == []


async def test_an_aborted_handler_gets_the_grace_to_clean_up_then_is_cut_short(
    app: duetime.App,
) -> None:
    started = asyncio.Event()
    steps: list[str] = []

    @app.task("stubborn")
    async def stubborn(payload: dict[str, Any]) -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            steps.append("cleaning")
            try:
                await asyncio.sleep(0.3)  # within the grace: finishes
                steps.append("cleaned")
                await asyncio.sleep(60)  # past the grace: cut short
            except asyncio.CancelledError:
                steps.append("cut")
                raise

    await app.schedule("stubborn", "s1")
    async with running(app, grace=1.0):
        await asyncio.wait_for(started.wait(), 10)
        assert await app.abort("stubborn", "s1") == "aborted"
        await eventually(lambda: "cut" in steps, within=20, what="the cut at the grace's end")
        await eventually(lambda: _gone(app, "stubborn", "s1"), within=15, what="the task ends")
    assert steps == ["cleaning", "cleaned", "cut"]


async def test_a_plain_def_handler_is_not_interruptible_and_its_result_is_discarded(
    app: duetime.App,
) -> None:
    started, release = threading.Event(), threading.Event()
    ended: list[str] = []

    @app.task("blocking", retries=3)
    def blocking(payload: dict[str, Any]) -> None:
        started.set()
        release.wait(10)
        ended.append("ended")
        raise RuntimeError("fails after the abort: discarded, not retried")

    heard = Heard()
    marked = marks_read(await app.open())
    await app.schedule("blocking", "b1")
    async with running(app, listeners=[heard]):
        await asyncio.to_thread(started.wait, 10)
        assert await app.abort("blocking", "b1") == "not_interruptible"
        # The worker has read the mark (and done what it does with it).
        await eventually(lambda: "b1" in marked, 25, "the worker reads the mark")
        assert ended == []  # its thread runs on
        info = await app.get("blocking", "b1")
        assert info is not None and info.state == "running"
        release.set()
        await eventually(lambda: _gone(app, "blocking", "b1"), within=15, what="the task ends")
    assert ended == ["ended"]
    assert [e.task_id for e in heard.aborts] == ["b1"]
    assert heard.retries == [] and heard.dead == []


async def test_a_task_that_is_not_running_is_cancelled_and_a_missing_one_is_not_found(
    app: duetime.App,
) -> None:
    await app.schedule("mail", "later", delay=timedelta(hours=1))
    assert await app.abort("mail", "later") == "cancelled"
    assert await app.get("mail", "later") is None
    assert await app.abort("mail", "later") == "not_found"


async def test_an_aborted_occurrence_of_a_periodic_task_ends_and_the_series_goes_on(
    app: duetime.App,
) -> None:
    runs: list[str] = []

    @app.task("tick")
    async def tick(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs.append(ctx.occurrence)
        await asyncio.sleep(60)

    first = await app.schedule("tick", "t1", every=timedelta(hours=1))
    async with running(app):
        await eventually(lambda: bool(runs), within=10, what="the first occurrence runs")
        assert await app.abort("tick", "t1") == "aborted"

        async def waits_for_the_next() -> bool:
            info = await app.get("tick", "t1")
            return info is not None and info.state == "due"

        await eventually(waits_for_the_next, within=15, what="the series goes on")
    info = await app.get("tick", "t1")
    assert info is not None and info.due == first + timedelta(hours=1)
    assert len(runs) == 1
    assert (await app.counts("tick"))["dead"] == 0


async def test_a_mark_belongs_to_the_run_that_holds_the_lease(
    app: duetime.App, store: duetime.stores.base.Store
) -> None:
    now = await app.now_ms()
    await store.schedule("mail", [NewTask("m1", now, record_text())])
    claim_options: dict[str, Any] = {"lease_ms": 30_000, "max_stalls": 3, "at_most_once": False}
    (claim,) = (await store.claim("mail", now_ms=now, limit=1, **claim_options)).claims
    assert await store.aborting("mail", [claim]) == []
    assert await store.abort("mail", "m1") == "running"
    assert await store.abort("mail", "m1") == "running"  # again: nothing more
    assert await store.aborting("mail", [claim]) == [claim]
    assert await store.aborting("mail", [claim]) == [claim]  # only read
    stored = await store.get("mail", "m1")
    assert stored is not None and stored.state == "running"  # the task is left as it is

    # The next occurrence (a new claim of the id) is not marked.
    await store.settle("mail", [duetime.stores.base.Outcome("next", claim, now, claim.record)], now)
    (again,) = (await store.claim("mail", now_ms=now, limit=1, **claim_options)).claims
    assert await store.aborting("mail", [again]) == []
    assert await store.aborting("mail", []) == []


async def test_marking_a_run_signals_the_workers_of_its_type(
    app: duetime.App, store: duetime.stores.base.Store
) -> None:
    now = await app.now_ms()
    await store.schedule("mail", [NewTask("m1", now, record_text())])
    claim_options: dict[str, Any] = {"lease_ms": 30_000, "max_stalls": 3, "at_most_once": False}
    await store.claim("mail", now_ms=now, limit=1, **claim_options)  # a cluster wakes by type
    heard: list[tuple[str, int]] = []
    listening = asyncio.create_task(store.listen(lambda t, due: heard.append((t, due))))
    try:
        await eventually(lambda: ("*", 0) in heard, within=5, what="the listener is up")
        await asyncio.sleep(0.2)
        assert await store.abort("mail", "m1") == "running"
        await eventually(
            lambda: ("mail", ABORT_WAKE_MS) in heard, within=10, what="the abort signal"
        )
    finally:
        listening.cancel()
        await asyncio.gather(listening, return_exceptions=True)


def marks_read(store: duetime.stores.base.Store) -> list[str]:
    """The ids of the runs that the real store's ``aborting`` answered as marked, as a
    worker asks (the method is wrapped on this one store object, nothing is mocked)."""
    read: list[str] = []
    real = store.aborting

    async def aborting(task_type: str, claims: Any) -> Any:
        marked = await real(task_type, claims)
        read.extend(c.id for c in marked)
        return marked

    store.aborting = aborting  # type: ignore[method-assign]
    return read


async def _gone(app: duetime.App, task_type: str, task_id: str) -> bool:
    return await app.get(task_type, task_id) is None


async def test_an_aborted_tick_of_a_cron_schedule_ends_and_the_schedule_goes_on(
    app: duetime.App,
) -> None:
    ticks: list[str] = []

    @app.cron("* * * * * *", name="report", timeout=120)
    async def report(ctx: duetime.Context) -> None:
        ticks.append(ctx.occurrence)
        await asyncio.sleep(60 if len(ticks) == 1 else 0)

    async with running(app):
        await eventually(lambda: bool(ticks), within=10, what="the first tick runs")
        assert await app.abort("report", "report") == "aborted"
        await eventually(lambda: len(ticks) >= 2, within=15, what="the next tick runs")
    assert [c.name for c in await app.crons()] == ["report"]
    assert (await app.counts("report"))["dead"] == 0


async def test_a_handed_off_tick_is_aborted_by_its_occurrence_id(app: duetime.App) -> None:
    ticks: list[str] = []

    @app.task("buildReport")
    async def build_report(payload: dict[str, Any], ctx: duetime.Context) -> None:
        ticks.append(ctx.occurrence)
        await asyncio.sleep(60 if len(ticks) == 1 else 0)

    await app.add_cron("report", "* * * * * *", task="buildReport", overlap="allow")
    async with running(app):
        await eventually(lambda: bool(ticks), within=10, what="the first tick runs")
        assert await app.abort("buildReport", ticks[0]) == "aborted"
        await eventually(lambda: _gone(app, "buildReport", ticks[0]), within=15, what="it ends")
        await app.pause_cron("report")
    assert [c.name for c in await app.crons()] == ["report"]


async def test_a_task_of_a_partitioned_type_is_aborted_in_its_partition(
    app: duetime.App,
) -> None:
    started: list[str] = []
    cleaned: list[str] = []

    @app.task("spread", partitions=3, concurrency=4)
    async def spread(payload: dict[str, Any], ctx: duetime.Context) -> None:
        started.append(ctx.task_id)
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cleaned.append(ctx.task_id)
            raise

    ids = [f"p{n}" for n in range(3)]
    assert len({partition_of(i, 3) for i in ids}) > 1  # in more than one partition
    for task_id in ids:
        await app.schedule("spread", task_id)
    async with running(app, grace=0.2):
        await eventually(lambda: len(started) == 3, within=10, what="every handler starts")
        for task_id in ids[:2]:
            assert await app.abort("spread", task_id) == "aborted"
        await eventually(lambda: sorted(cleaned) == ids[:2], within=10, what="two cancelled")
        await eventually(lambda: count_is(app, "spread", "running", 1), what="the third runs on")
        assert await app.get("spread", ids[2]) is not None


async def test_a_handler_that_swallows_the_cancellation_still_ends_as_aborted(
    app: duetime.App,
) -> None:
    started = asyncio.Event()

    @app.task("swallow", retries=3)
    async def swallow(payload: dict[str, Any]) -> str:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            return "finished anyway"  # its result is discarded
        return "slept"

    heard = Heard()
    await app.schedule("swallow", "w1", every=timedelta(hours=1))
    async with running(app, listeners=[heard]):
        await asyncio.wait_for(started.wait(), 10)
        assert await app.abort("swallow", "w1") == "aborted"
        await eventually(lambda: bool(heard.aborts), within=10, what="the run ends as aborted")
    assert heard.retries == [] and heard.dead == []
    info = await app.get("swallow", "w1")
    assert info is not None and info.state == "due" and info.attempts == 0  # the next one
