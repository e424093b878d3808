"""The overlap policies buffer_one, buffer_all and cancel_other on each store, with a
handler that runs longer than the schedule's period (a tick every second); skip and allow
are in test_cron.py. The buffers run on the harness's clock, a long run moving it on;
cancel_other needs a real worker (the next tick's claim aborts a run still running)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import duetime
from duetime.testing import Harness, harness
from tests.helpers import eventually, running

EVERY_SECOND = "* * * * * *"
S = timedelta(seconds=1)
#: A whole second: each step of a second lands on a tick.
T = datetime(2031, 3, 3, 9, 0, 0, tzinfo=UTC)
FIRST = int((T + S).timestamp() * 1000)


@dataclass
class Ledger:
    """The runs of one schedule: their ticks, and when each began and ended (the app's
    clock)."""

    app: duetime.App
    ticks: list[int] = field(default_factory=list)
    began: list[int] = field(default_factory=list)
    ended: list[int] = field(default_factory=list)
    running: int = 0
    peak: int = 0

    def start(self, ctx: duetime.Context) -> None:
        self.ticks.append(int(ctx.due.timestamp() * 1000))
        self.began.append(self.app.clock.now_ms())
        self.running += 1
        self.peak = max(self.peak, self.running)

    def end(self) -> None:
        self.ended.append(self.app.clock.now_ms())
        self.running -= 1


async def _info(app: duetime.App, name: str) -> duetime.CronInfo:
    return next(c for c in await app.crons() if c.name == name)


async def _steps(h: Harness, count: int) -> None:
    for _ in range(count):
        h.advance(S)
        await h.run_due()


async def test_buffer_one_runs_one_tick_that_came_due_when_the_long_run_ends(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    ledger = Ledger(app)
    box: list[Harness] = []

    @app.cron(EVERY_SECOND, name="one", overlap="buffer_one", timeout=10)
    async def one(ctx: duetime.Context) -> None:
        ledger.start(ctx)
        if len(ledger.ticks) == 1:
            box[0].advance(timedelta(milliseconds=2400))  # the first outlasts 2 ticks
        ledger.end()

    async with harness(app, url=store_url, start=T) as h:
        box.append(h)
        await _steps(h, 4)
        info = await _info(app, "one")

    # T+1 came due during the first run and waited; T+2 was skipped; then the ticks go on.
    assert ledger.ticks[:3] == [FIRST, FIRST + 1000, FIRST + 3000]
    assert ledger.began[1] == ledger.ended[0]  # it ran as soon as the long run ended
    assert ledger.peak == 1
    assert info.skipped_count == 1


async def test_buffer_all_runs_every_tick_that_came_due_in_order_when_the_long_run_ends(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    ledger = Ledger(app)
    box: list[Harness] = []

    @app.cron(EVERY_SECOND, name="all", overlap="buffer_all", timeout=10)
    async def all_(ctx: duetime.Context) -> None:
        ledger.start(ctx)
        took = 3400 if len(ledger.ticks) == 1 else 50  # the first outlasts 3 ticks
        box[0].advance(timedelta(milliseconds=took))
        ledger.end()

    async with harness(app, url=store_url, start=T) as h:
        box.append(h)
        await _steps(h, 4)
        info = await _info(app, "all")

    assert ledger.ticks[:5] == [FIRST + n * 1000 for n in range(5)]  # none lost, in order
    # The three that waited ran one after the other, as soon as the long run ended.
    assert all(ledger.began[n] == ledger.ended[n - 1] for n in (1, 2, 3))
    assert ledger.ended[3] - ledger.ended[0] == 150
    assert ledger.peak == 1
    assert info.skipped_count == 0


async def test_cancel_other_aborts_the_long_run_as_the_next_tick_comes_due_and_runs_it(
    app: duetime.App,
) -> None:
    ledger = Ledger(app)
    cancelled: list[int] = []
    aborts: list[duetime.WorkerEvent] = []

    class Heard(duetime.Listener):
        def aborted(self, event: duetime.WorkerEvent) -> None:
            aborts.append(event)

    @app.cron(EVERY_SECOND, name="latest", overlap="cancel_other", retries=3)
    async def latest(ctx: duetime.Context) -> None:
        ledger.start(ctx)
        try:
            await asyncio.sleep(60 if len(ledger.ticks) == 1 else 0)
        except asyncio.CancelledError:
            cancelled.append(app.clock.now_ms())  # the store's clock, as the ticks
            await asyncio.sleep(0.2)  # its cleanup, within the worker's grace
            raise
        finally:
            ledger.end()

    async with running(app, listeners=[Heard()]):
        await eventually(lambda: len(ledger.ended) >= 3, within=25, what="three runs")
    first = ledger.ticks[0]
    assert ledger.ticks[:3] == [first, first + 1000, first + 2000]
    assert len(cancelled) == 1
    # Cancelled once the next tick came due, never before, and that tick began once the
    # aborted run's cleanup was over (how soon is latency, the benchmark's).
    assert first + 1000 <= cancelled[0]
    assert ledger.began[1] >= ledger.ended[0]
    assert ledger.peak == 1
    assert [e.task_id for e in aborts] == ["latest"]
    assert "cancel_other" in (aborts[0].error or "")
    assert (await app.counts("latest"))["dead"] == 0  # not retried, not filed
