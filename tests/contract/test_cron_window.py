"""A cron schedule's start and end under every overlap and missed policy, on each store, on a
clock the tests move: the ticks of the window are run, missed or skipped, each once, and a
tick outside it does nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import duetime
from duetime.testing import Harness, Run, harness

EVERY_SECOND = "* * * * * *"
S = timedelta(seconds=1)
#: A whole second: each step of a second lands on a tick.
T = datetime(2031, 3, 3, 9, 0, 0, tzinfo=UTC)
OVERLAPS = ("skip", "allow", "buffer_one", "buffer_all", "cancel_other")
MISSED = ("skip", "once", "all")


class Ticker:
    """A handler of "report" that notes the tick of each run; a run of a tick in ``long``
    takes ``took`` of the harness's clock."""

    def __init__(self, app: duetime.App, took: timedelta, long: set[datetime] | None = None):
        self.ticks: list[datetime] = []
        self.names: list[str] = []
        self.harness: Harness | None = None
        self.took, self.long = took, long

        @app.task("report")
        async def report(payload: dict[str, Any], ctx: duetime.Context) -> None:
            tick = datetime.fromtimestamp(int(ctx.occurrence.rpartition("@")[2]) / 1000, UTC)
            self.ticks.append(tick)
            self.names.append(ctx.occurrence.rpartition("@")[0])
            if self.harness is not None and (self.long is None or tick in self.long):
                self.harness.advance(self.took)

    def of(self, name: str) -> list[datetime]:
        """The ticks run of schedule ``name``, in order."""
        return [t for t, n in zip(self.ticks, self.names, strict=True) if n == name]


async def _info(app: duetime.App, name: str) -> duetime.CronInfo:
    (found,) = [c for c in await app.crons() if c.name == name]
    return found


async def _steps(h: Harness, count: int) -> list[Run]:
    runs: list[Run] = []
    for _ in range(count):
        h.advance(S)
        runs += await h.run_due()
    return runs


@pytest.mark.parametrize("overlap", OVERLAPS)
@pytest.mark.parametrize("missed", MISSED)
async def test_a_last_run_that_outlasts_the_end_ends_as_its_handler_does_and_counts_nothing(
    store_url: str, namespace: str, overlap: str, missed: str
) -> None:
    app = duetime.App(namespace=namespace)
    start, end = T + S, T + 4 * S  # four ticks
    # The last tick's run takes 2.5 s: two ticks past the end come due while it runs.
    ticker = Ticker(app, timedelta(milliseconds=2500), long={end})
    async with harness(app, url=store_url, start=T) as h:
        ticker.harness = h
        await app.add_cron(
            "window", EVERY_SECOND, task="report", start=start, end=end,
            overlap=overlap, missed=missed,  # type: ignore[arg-type]
        )  # fmt: skip
        runs = await _steps(h, 6)
        after = await _info(app, "window")

    assert ticker.ticks == [start + n * S for n in range(4)]
    assert {run.outcome for run in runs} == {"done"}  # none aborted
    assert (after.run_count, after.skipped_count, after.missed_count) == (4, 0, 0)
    assert (after.finished, after.next_run) == (True, None)


@pytest.mark.parametrize("missed", MISSED)
async def test_ticks_before_the_start_are_none_when_workers_come_back_after_it(
    store_url: str, namespace: str, missed: str
) -> None:
    # One schedule per overlap policy, side by side: their runs take no time.
    app = duetime.App(namespace=namespace)
    start = T + 3 * S
    ticker = Ticker(app, timedelta(0))
    async with harness(app, url=store_url, start=T) as h:
        for overlap in OVERLAPS:
            await app.add_cron(
                overlap, EVERY_SECOND, task="report", start=start,
                overlap=overlap, missed=missed,  # type: ignore[arg-type]
            )  # fmt: skip
        h.advance(timedelta(milliseconds=5500))  # every worker down across the start
        await h.run_due()
        await _steps(h, 2)
        infos = {overlap: await _info(app, overlap) for overlap in OVERLAPS}

    caught_up = [start, start + S] if missed == "all" else []
    expected = [*caught_up, start + 2 * S, start + 3 * S, start + 4 * S]
    for overlap, after in infos.items():
        assert ticker.of(overlap) == expected, overlap
        assert (after.missed_count, after.skipped_count) == (2 - len(caught_up), 0), overlap
        assert after.run_count == len(expected), overlap


@pytest.mark.parametrize("overlap", OVERLAPS)
async def test_the_runs_and_skips_of_long_runs_add_up_to_the_ticks_of_the_window(
    store_url: str, namespace: str, overlap: str
) -> None:
    app = duetime.App(namespace=namespace)
    start, end = T + S, T + 8 * S  # eight ticks
    ticker = Ticker(app, timedelta(milliseconds=2500))  # each run takes 2.5 ticks
    async with harness(app, url=store_url, start=T) as h:
        ticker.harness = h
        await app.add_cron(
            "window", EVERY_SECOND, task="report", start=start, end=end,
            overlap=overlap,  # type: ignore[arg-type]
        )  # fmt: skip
        await _steps(h, 10)
        after = await _info(app, "window")

    assert all(start <= tick <= end for tick in ticker.ticks)
    assert len(ticker.ticks) + after.skipped_count + after.missed_count == 8
    assert after.run_count == len(ticker.ticks) and after.finished
    if overlap == "buffer_one":
        # Each run leaves the first tick that came due meanwhile waiting and skips the rest.
        assert ticker.ticks == [start + n * S for n in (0, 1, 3, 6)]
        assert after.skipped_count == 4
    if overlap == "buffer_all":
        assert ticker.ticks == [start + n * S for n in range(8)]
