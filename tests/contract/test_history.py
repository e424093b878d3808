"""The run history on each store: every finished run recorded with its outcome, retention by
count and by age, per-type settings, reads by task id, and crashed runs."""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import duetime
from duetime.clock import epoch_ms
from duetime.stores.base import done, noted
from duetime.stores.capabilities import RUN_HISTORY, use
from duetime.stores.runs import RunLog, RunNote
from duetime.testing import harness
from tests.helpers import eventually, running

FAST = duetime.Backoff(base=timedelta(milliseconds=20), jitter=0)
#: Claims often, so that age trimming (done as workers claim) is seen quickly.
QUICK = duetime.Pacing(max_idle=timedelta(milliseconds=100))


async def runs_of(app: duetime.App, task_type: str, n: int, **options: Any) -> list[Any]:
    """The type's runs, once there are ``n``."""
    found: list[Any] = []

    async def enough() -> bool:
        found[:] = await app.history(task_type, limit=1000, **options)
        return len(found) >= n

    await eventually(enough, within=10, what=f"{n} runs of {task_type}")
    return found


async def test_every_finished_run_is_recorded_with_its_outcome(app: duetime.App) -> None:
    @app.task("h", retries=1, backoff=FAST)
    async def h(payload: dict[str, Any], ctx: duetime.Context) -> None:
        await asyncio.sleep(0.02)
        if payload["mode"] == "always" or (payload["mode"] == "once" and ctx.attempt == 1):
            raise ValueError(f"boom {ctx.task_id}")
        if payload["mode"] == "abort":
            raise duetime.Abort("not wanted")

    due = datetime.now(UTC)
    async with running(app) as worker:
        for task_id, mode in (("ok", "fine"), ("flaky", "once"), ("bad", "always")):
            await app.schedule("h", task_id, at=due, payload={"mode": mode})
        await app.schedule("h", "no", payload={"mode": "abort"})
        runs = await runs_of(app, "h", 6)

    assert sorted((r.task_id, r.attempt, r.outcome) for r in runs) == [
        ("bad", 1, "failed"),
        ("bad", 2, "dead"),
        ("flaky", 1, "failed"),
        ("flaky", 2, "done"),
        ("no", 1, "dead"),
        ("ok", 1, "done"),
    ]
    by = {(r.task_id, r.attempt): r for r in runs}
    finished = [r.finished for r in runs]
    assert finished == sorted(finished, reverse=True)  # newest first
    for r in runs:
        assert r.task_type == "h" and r.worker == worker.id
        assert r.started is not None and r.finished is not None and r.duration is not None
        assert r.started <= r.finished and r.duration >= timedelta(milliseconds=15)
        assert r.occurrence_id == f"{r.task_id}@{int(r.occurrence.timestamp() * 1000)}"
    # A retry keeps its occurrence: both attempts ran the same one, the task's due time.
    assert by["bad", 1].occurrence == by["bad", 2].occurrence
    assert by["bad", 1].occurrence_id == f"bad@{math.ceil(due.timestamp() * 1000)}"
    assert by["bad", 2].error == "ValueError: boom bad"
    assert by["bad", 2].traceback is not None and "boom bad" in by["bad", 2].traceback
    assert by["flaky", 1].error == "ValueError: boom flaky" and by["flaky", 2].error is None
    assert by["ok", 1].traceback is None and by["ok", 1].error is None
    assert by["no", 1].error == "not wanted" and by["no", 1].traceback is None


async def test_a_series_records_each_occurrence(app: duetime.App) -> None:
    @app.task("tick")
    async def tick(payload: dict[str, Any]) -> None:
        pass

    async with running(app):
        await app.schedule("tick", "s1", every=timedelta(milliseconds=100))
        await app.schedule("tick", "s2", every=timedelta(milliseconds=100))
        runs = await runs_of(app, "tick", 4, task_id="s1")
        await app.cancel("tick", "s1")
        await app.cancel("tick", "s2")

    assert {r.task_id for r in runs} == {"s1"}
    occurrences = [r.occurrence for r in runs]
    assert occurrences == sorted(occurrences, reverse=True) and len(set(occurrences)) == len(runs)
    assert {r.occurrence_id for r in runs} == {
        f"s1@{int(r.occurrence.timestamp() * 1000)}" for r in runs
    }
    assert len(await app.history("tick", task_id="s1", limit=2)) == 2


async def test_a_type_keeps_its_newest_runs_up_to_keep(app: duetime.App) -> None:
    @app.task("kept", concurrency=1, history=duetime.History(keep=5))
    async def kept(payload: dict[str, Any]) -> None:
        pass

    start = datetime.now(UTC)
    async with running(app):
        for n in range(12):  # one after the other, in their order
            await app.schedule("kept", f"k{n:02}", at=start + timedelta(milliseconds=20 * n))
        await runs_of(app, "kept", 1, task_id="k11")
        await eventually(lambda: _settled(app, "kept"), what="every run settled")

    runs = await app.history("kept", limit=100)
    assert [r.task_id for r in runs] == ["k11", "k10", "k09", "k08", "k07"]


async def _settled(app: duetime.App, task_type: str) -> bool:
    return (await app.counts(task_type)) == {"due": 0, "running": 0, "dead": 0}


async def test_runs_older_than_max_age_are_dropped(store_url: str, namespace: str) -> None:
    app = duetime.App(namespace=namespace)

    @app.task("aged", history=duetime.History(max_age=timedelta(seconds=1)))
    async def aged(payload: dict[str, Any]) -> None:
        pass

    async with harness(app, url=store_url) as h:
        await app.schedule("aged", "old1")
        await app.schedule("aged", "old2")
        await h.run_due()
        assert len(await app.history("aged")) == 2
        h.advance(1)
        await h.run_due()
        assert len(await app.history("aged")) == 2  # a second old: kept
        # Gone once they are older than max_age, while nothing new runs (a worker's claims
        # trim as it looks for work) ...
        h.advance(0.5)
        await h.run_due()
        assert await _no_runs(app, "aged")
        await app.schedule("aged", "new")
        await h.run_due()
        runs = await app.history("aged")
    # ... and a new run is recorded alone.
    assert [r.task_id for r in runs] == ["new"]


async def _no_runs(app: duetime.App, task_type: str) -> bool:
    return not await app.history(task_type)


async def test_history_is_off_for_a_type_that_says_so_and_for_an_app_that_does(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(store_url, namespace=namespace)
    quiet = duetime.App(store_url, namespace=namespace + "q", history=False)
    try:
        for a, off_setting, on_setting in ((app, False, None), (quiet, None, True)):
            await _off_and_on(a, off_setting, on_setting)
    finally:
        await app.close()
        await quiet.close()


async def _off_and_on(app: duetime.App, off_setting: bool | None, on_setting: bool | None) -> None:
    """Types "off" and "on" with those settings: "on" keeps its runs, "off" none."""
    ran: list[str] = []

    @app.task("on", history=on_setting)
    async def on(payload: dict[str, Any], ctx: duetime.Context) -> None:
        ran.append(ctx.task_type)

    @app.task("off", history=off_setting)
    async def off(payload: dict[str, Any], ctx: duetime.Context) -> None:
        ran.append(ctx.task_type)

    async with running(app):
        await app.schedule("off", "x")
        await app.schedule("on", "y")
        await runs_of(app, "on", 1)
        await eventually(lambda: "off" in ran)
        await eventually(lambda: _settled(app, "off"))
    assert await app.history("off") == []
    assert [r.task_id for r in await app.history("on")] == ["y"]


async def test_a_run_whose_lease_expired_appears_once_a_worker_reaps_it(
    app: duetime.App,
) -> None:
    """A worker that died mid-run settles nothing: the claim that finds its lease expired
    records the attempt, as failed (it runs again) or dead (out of stalls)."""
    ran: list[int] = []

    # The real worker's lease is long (a loaded machine must not make its own runs stall);
    # the dead one's, given to its claim, is short.
    @app.task("crash", lease=5, max_stalls=1, pacing=QUICK)
    async def crash(payload: dict[str, Any], ctx: duetime.Context) -> None:
        ran.append(ctx.attempt)

    store = await app.open()
    past = datetime.now(UTC) - timedelta(minutes=1)
    await app.schedule("crash", "c1", payload={"n": 1}, at=past)
    await app.schedule("crash", "c2", at=past)
    # The first attempts of both, by a "worker" that then died: claimed a minute ago, on a
    # lease that ran out a minute ago less 200 ms, and never settled.
    claimed = await store.claim(
        "crash", now_ms=epoch_ms(past), limit=2, lease_ms=200, max_stalls=1, at_most_once=False
    )
    assert len(claimed.claims) == 2
    async with running(app):
        runs = await runs_of(app, "crash", 4)
    assert sorted(ran) == [2, 2]
    assert sorted((r.task_id, r.attempt, r.outcome) for r in runs) == [
        ("c1", 1, "failed"),
        ("c1", 2, "done"),
        ("c2", 1, "failed"),
        ("c2", 2, "done"),
    ]
    crashed = [r for r in runs if r.outcome == "failed"]
    for r in crashed:
        assert r.error == "lease expired (its worker stopped or hung)"
        assert r.started is None and r.duration is None and r.worker is None
        assert r.finished is not None
    assert {r.occurrence for r in crashed} == {r.occurrence for r in runs if r.outcome == "done"}


async def test_a_store_records_only_kept_outcomes_and_trims_by_count(
    app: duetime.App,
) -> None:
    """The capability itself: a stale outcome (its lease lost) is not recorded, an outcome
    without a note is settled and not recorded, and the history keeps the newest."""
    store = await app.open()
    history = use(store, RUN_HISTORY)
    now = app.clock.now_ms()
    for n in range(4):
        await app.schedule("mail", f"m{n}", at=datetime.fromtimestamp((now - 10) / 1000, UTC))
    batch = await store.claim(
        "mail", now_ms=now, limit=4, lease_ms=60_000, max_stalls=3, at_most_once=False
    )
    claims = sorted(batch.claims, key=lambda c: c.id)
    stale = claims[3]._replace(token=claims[3].token + 1000)
    outcomes = [
        noted(done(c), RunNote(now - 5, now + n, 1, c.due_ms, "done")) for n, c in enumerate(claims)
    ]
    outcomes[2] = done(claims[2])  # no note: not recorded
    outcomes[3] = noted(done(stale), RunNote(now, now + 9, 1, stale.due_ms, "done"))
    kept = await history.settle("mail", outcomes, now, RunLog("w-1", 1, 60_000))
    assert kept == [True, True, True, False]
    runs = await history.runs("mail", limit=10)
    assert [(r.task_id, r.worker, r.started_ms, r.finished_ms) for r in runs] == [
        ("m1", "w-1", now - 5, now + 1)  # keep=1: the newest of m0 and m1
    ]
    assert await history.runs("mail", task_id="m0", limit=10) == []
    assert await history.runs("report", limit=10) == []  # a type with no runs


@pytest.mark.parametrize("limit", [0, -1, 1_000_001, True])
async def test_a_bad_limit_or_type_is_refused(app: duetime.App, limit: int) -> None:
    with pytest.raises(duetime.ValidationError, match="limit"):
        await app.history("mail", limit=limit)
    with pytest.raises(duetime.UnknownTaskType):
        await app.history("nope")


def test_bad_history_settings_are_refused_naming_the_field() -> None:
    with pytest.raises(duetime.ValidationError, match="history.keep"):
        duetime.History(keep=0)
    with pytest.raises(duetime.ValidationError, match="history.max_age"):
        duetime.History(max_age=timedelta(0))
    with pytest.raises(duetime.ValidationError, match="history"):
        duetime.App("sqlite:///x.db", history=5)  # type: ignore[arg-type]
    app = duetime.App("sqlite:///x.db")
    with pytest.raises(duetime.ValidationError, match="history"):
        app.task("t", history="yes")  # type: ignore[arg-type]


async def test_the_last_hour_counts_are_still_history_of_minutes(app: duetime.App) -> None:
    assert await app.history() == await app.history(60) == await app.recent(60)
    assert await app.history(minutes=5) == await app.recent(5)


async def test_an_aborted_run_ends_in_the_history_as_aborted(app: duetime.App) -> None:
    started = asyncio.Event()

    @app.task("slow", retries=3)
    async def slow(payload: dict[str, Any]) -> None:
        started.set()
        await asyncio.sleep(60)

    async with running(app) as worker:
        await app.schedule("slow", "s1")
        await asyncio.wait_for(started.wait(), 10)
        assert await app.abort("slow", "s1") == "aborted"
        (run,) = await runs_of(app, "slow", 1)
    assert (run.task_id, run.attempt, run.outcome, run.worker) == ("s1", 1, "aborted", worker.id)
    assert run.error is not None and "abort" in run.error and run.traceback is None
    assert run.started is not None and run.duration is not None
