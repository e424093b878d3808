"""A failed cron tick's retry and the ticks that come due meanwhile, on each store, on a
clock the tests move: every tick is run, missed or skipped, once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import duetime
from duetime.testing import Harness, harness

EVERY_SECOND = "* * * * * *"
S = timedelta(seconds=1)
#: A whole second before the first tick: each step of a second lands on a tick.
T = datetime(2031, 3, 3, 9, 0, 0, tzinfo=UTC)
FIRST = T + S


class Flaky:
    """A handler of "report" whose first attempt at the first tick takes ``took`` of the
    harness's clock and fails; every other run succeeds at once."""

    def __init__(self, app: duetime.App, took: timedelta, backoff: float) -> None:
        self.runs: list[tuple[datetime, int]] = []
        self.harness: Harness | None = None

        @app.task("report", retries=2, backoff=backoff)
        async def report(payload: dict[str, Any], ctx: duetime.Context) -> None:
            tick = datetime.fromtimestamp(int(ctx.occurrence.rpartition("@")[2]) / 1000, UTC)
            self.runs.append((tick, ctx.attempt))
            if tick == FIRST and ctx.attempt == 1:
                assert self.harness is not None
                self.harness.advance(took)
                raise RuntimeError("the first tick failed")


async def _accounted(app: duetime.App, name: str, flaky: Flaky) -> tuple[int, int]:
    """The ticks from the first up to the one the schedule waits for, and how many of them
    ran, were missed or were skipped (more than the ticks: some counted twice)."""
    (info,) = [c for c in await app.crons() if c.name == name]
    (pending,) = await app.next_runs(name, 1)
    ticks = int((pending - FIRST) / S)
    ran = {tick for tick, _ in flaky.runs}
    return ticks, len(ran) + info.missed_count + info.skipped_count


@pytest.mark.parametrize("missed", ["skip", "once", "all"])
@pytest.mark.parametrize(
    ("took", "backoff"),
    [(timedelta(0), 4.5), (timedelta(milliseconds=2500), 1.0)],
    ids=["ticks due during the back-off", "ticks due during the failed run"],
)
async def test_the_ticks_that_come_due_before_a_retry_are_each_run_missed_or_skipped_once(
    store_url: str, namespace: str, missed: str, took: timedelta, backoff: float
) -> None:
    app = duetime.App(namespace=namespace)
    flaky = Flaky(app, took, backoff)
    async with harness(app, url=store_url, start=T) as h:
        flaky.harness = h
        await app.add_cron("flaky", EVERY_SECOND, task="report", missed=missed)  # type: ignore[arg-type]
        for _ in range(8):
            h.advance(S)
            await h.run_due()
        ticks, accounted = await _accounted(app, "flaky", flaky)

    assert flaky.runs[:2] == [(FIRST, 1), (FIRST, 2)]  # the failure, then its retry
    assert ticks >= 6 and accounted == ticks, flaky.runs
    later = [tick for tick, _ in flaky.runs[2:]]
    assert later == sorted(set(later)) and FIRST not in later
    if missed == "all":
        assert later == [FIRST + n * S for n in range(1, len(later) + 1)]
