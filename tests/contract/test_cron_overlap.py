"""The overlap policies buffer_one, buffer_all and cancel_other on each store, with a
handler that runs longer than the schedule's period (a tick every second); skip and allow
are in test_cron.py. Real time: each test takes a few seconds."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import duetime
from tests.helpers import eventually, running

EVERY_SECOND = "* * * * * *"


@dataclass
class Ledger:
    """The runs of one schedule: their ticks, and when each began and ended (monotonic)."""

    ticks: list[int] = field(default_factory=list)
    began: list[float] = field(default_factory=list)
    ended: list[float] = field(default_factory=list)
    running: int = 0
    peak: int = 0

    def start(self, ctx: duetime.Context) -> None:
        self.ticks.append(int(ctx.due.timestamp() * 1000))
        self.began.append(time.monotonic())
        self.running += 1
        self.peak = max(self.peak, self.running)

    def end(self) -> None:
        self.ended.append(time.monotonic())
        self.running -= 1


async def _info(app: duetime.App, name: str) -> duetime.CronInfo:
    return next(c for c in await app.crons() if c.name == name)


async def test_buffer_one_runs_one_tick_that_came_due_when_the_long_run_ends(
    app: duetime.App,
) -> None:
    ledger = Ledger()

    @app.cron(EVERY_SECOND, name="one", overlap="buffer_one", timeout=10)
    async def one(ctx: duetime.Context) -> None:
        ledger.start(ctx)
        await asyncio.sleep(2.4 if len(ledger.ticks) == 1 else 0)  # the first outlasts 2 ticks
        ledger.end()

    async with running(app):
        await eventually(lambda: len(ledger.ended) >= 3, within=10, what="three runs")
    first = ledger.ticks[0]
    # T+1 came due during the first run and waited; T+2 was skipped; then the ticks go on.
    assert ledger.ticks[:3] == [first, first + 1000, first + 3000]
    assert ledger.began[1] - ledger.ended[0] < 0.5  # it ran as soon as the long run ended
    assert ledger.peak == 1
    assert (await _info(app, "one")).skipped_count == 1


async def test_buffer_all_runs_every_tick_that_came_due_in_order_when_the_long_run_ends(
    app: duetime.App,
) -> None:
    ledger = Ledger()

    @app.cron(EVERY_SECOND, name="all", overlap="buffer_all", timeout=10)
    async def all_(ctx: duetime.Context) -> None:
        ledger.start(ctx)
        await asyncio.sleep(3.4 if len(ledger.ticks) == 1 else 0.05)  # outlasts 3 ticks
        ledger.end()

    async with running(app):
        await eventually(lambda: len(ledger.ended) >= 5, within=12, what="five runs")
    first = ledger.ticks[0]
    assert ledger.ticks[:5] == [first + n * 1000 for n in range(5)]  # none lost, in order
    # The three that waited ran one after the other, as soon as the long run ended.
    assert all(ledger.began[n] - ledger.ended[n - 1] < 0.5 for n in (1, 2, 3))
    assert ledger.ended[3] - ledger.ended[0] < 1.0
    assert ledger.peak == 1
    assert (await _info(app, "all")).skipped_count == 0


async def test_cancel_other_aborts_the_long_run_as_the_next_tick_comes_due_and_runs_it(
    app: duetime.App,
) -> None:
    ledger = Ledger()
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
        await eventually(lambda: len(ledger.ended) >= 3, within=10, what="three runs")
    first = ledger.ticks[0]
    assert ledger.ticks[:3] == [first, first + 1000, first + 2000]
    assert len(cancelled) == 1
    # Cancelled as the next tick came due, and that tick began once the aborted run's
    # cleanup was over.
    assert first + 1000 - 20 <= cancelled[0] < first + 1000 + 500
    assert 0 <= ledger.began[1] - ledger.ended[0] < 0.5
    assert ledger.peak == 1
    assert [e.task_id for e in aborts] == ["latest"]
    assert "cancel_other" in (aborts[0].error or "")
    assert (await app.counts("latest"))["dead"] == 0  # not retried, not filed
