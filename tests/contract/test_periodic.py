"""Periodic tasks on each store: phase, the end date, the reschedule hook, failed occurrences."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import duetime
from duetime.clock import from_ms
from duetime.testing import harness
from tests.helpers import count_is, eventually, has_state, is_gone, running

FAST = duetime.Backoff(base=timedelta(milliseconds=20), jitter=0)


async def test_a_periodic_task_runs_every_period_without_drift_until_its_end(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    dues: list[datetime] = []
    period = timedelta(milliseconds=150)

    @app.task("tick")
    async def tick(payload: dict[str, Any], ctx: duetime.Context) -> None:
        dues.append(ctx.due)

    async with harness(app, url=store_url) as h:
        start = h.now + timedelta(milliseconds=200)
        until = start + timedelta(milliseconds=460)
        await app.schedule("tick", "t", at=start, every=period, until=until)
        h.advance(0.2)
        while await app.get("tick", "t") is not None and len(dues) < 10:
            # Each occurrence claimed 30 ms late: the next one is not shifted by it.
            h.advance(0.03)
            await h.run_due()
            h.advance(period - timedelta(milliseconds=30))

    assert dues == [start + period * n for n in range(4)]


async def test_the_reschedule_hook_deep_merges_changes_and_can_end_the_series(
    app: duetime.App,
) -> None:
    payloads: list[dict[str, Any]] = []

    @app.task("series")
    async def series(payload: dict[str, Any]) -> None:
        payloads.append(payload)
        payload["mutated"] = True  # the handler's copy; must not leak into the next one

    @series.reschedule
    async def check(payload: dict[str, Any], ctx: duetime.Context) -> Any:
        if payload["cfg"]["round"] >= 3:
            return False
        return duetime.Reschedule(
            payload={
                "cfg": {"round": payload["cfg"]["round"] + 1},
                "tags": ["r" + str(payload["cfg"]["round"])],
            }
        )

    async with running(app):
        await app.schedule(
            "series",
            "s",
            every=timedelta(milliseconds=50),
            payload={"cfg": {"round": 1, "keep": "me"}, "tags": ["a", "b"]},
        )
        await eventually(lambda: is_gone(app, "series", "s"))

    assert [p["cfg"] for p in payloads] == [{"round": n, "keep": "me"} for n in (1, 2, 3)]
    assert [p["tags"] for p in payloads] == [["a", "b"], ["r1"], ["r2"]]


async def test_a_failing_hook_does_not_end_the_series(app: duetime.App) -> None:
    runs: list[int] = []

    @app.task("hooked")
    async def hooked(payload: dict[str, Any]) -> None:
        runs.append(1)

    @hooked.reschedule
    def broken(payload: dict[str, Any]) -> Any:
        raise RuntimeError("hook bug")

    async with running(app):
        await app.schedule("hooked", "h", every=timedelta(milliseconds=50))
        await eventually(lambda: len(runs) >= 3)
    info = await app.get("hooked", "h")
    assert info is not None and info.state == "due"


async def test_a_failed_occurrence_is_dead_lettered_and_the_series_goes_on(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    runs: list[datetime] = []

    @app.task("report", retries=0)
    async def report(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs.append(ctx.due)
        if len(runs) == 1:
            raise RuntimeError("first occurrence fails")

    async with harness(app, url=store_url) as h:
        await app.schedule("report", "daily", every=timedelta(milliseconds=100))
        for _ in range(3):
            await h.run_due()
            h.advance(0.1)
        dead = await app.list("report", "dead")
        info = await app.get("report", "daily")

    first_ms = int(runs[0].timestamp() * 1000)
    assert [d.task_id for d in dead] == [f"daily@{first_ms}"]
    assert dead[0].error == "RuntimeError: first occurrence fails"
    assert runs == [runs[0] + timedelta(milliseconds=100 * n) for n in range(3)]
    assert info is not None and info.state == "due"


async def test_a_series_retry_sees_the_payload_the_last_reschedule_left(
    app: duetime.App,
) -> None:
    seen: list[dict[str, Any]] = []

    @app.task("growing", retries=1, backoff=FAST)
    async def growing(payload: dict[str, Any], ctx: duetime.Context) -> None:
        seen.append(json.loads(json.dumps(payload)))
        payload["round"] = -1
        if len(seen) == 2:
            raise RuntimeError("the second occurrence fails once")

    @growing.reschedule
    def next_round(payload: dict[str, Any]) -> duetime.Reschedule | bool:
        return duetime.Reschedule(payload={"round": payload["round"] + 1})

    async with running(app):
        await app.schedule("growing", "g", every=timedelta(milliseconds=100), payload={"round": 1})
        await eventually(lambda: len(seen) >= 4)
        await app.cancel("growing", "g")

    assert seen[:4] == [{"round": 1}, {"round": 2}, {"round": 2}, {"round": 3}]


async def test_a_series_due_years_ago_runs_once_now_and_next_when_its_phase_says(
    app: duetime.App,
) -> None:
    """Missed occurrences fold into one run: the latest, not the first and then the latest."""
    dues: list[datetime] = []

    @app.task("sync")
    async def sync(payload: dict[str, Any], ctx: duetime.Context) -> None:
        dues.append(ctx.due)

    every = timedelta(seconds=60)
    # Early on 2020-01-01, in a phase whose next occurrence is half a period from now, so
    # that none comes due while the test runs.
    half_ahead = from_ms(await app.now_ms()) + every / 2
    start = datetime(2020, 1, 1, tzinfo=UTC)
    start += (half_ahead - start) % every
    await app.schedule("sync", "s", at=start, every=every)
    async with running(app):
        await eventually(lambda: len(dues) == 1)
        await asyncio.sleep(0.5)  # and not again
        now = from_ms(await app.now_ms())
        info = await app.get("sync", "s")

    assert len(dues) == 1
    assert now - every < dues[0] <= now and (dues[0] - start) % every == timedelta(0)
    assert info is not None and info.state == "due" and info.due == dues[0] + every > now


async def test_the_dead_letter_of_an_id_of_200_bytes_can_be_got_retried_and_cancelled(
    app: duetime.App,
) -> None:
    """The longest id a user may pick gives an occurrence id over 200 bytes: every call on
    tasks takes it."""
    task_id = "é" * 100  # 200 bytes of UTF-8

    @app.task("report", retries=0)
    async def report(payload: dict[str, Any]) -> None:
        raise RuntimeError("refused")

    await app.schedule("report", task_id, every=timedelta(hours=1))
    async with running(app):
        await eventually(lambda: count_is(app, "report", "dead", 1))
    (dead,) = await app.list("report", "dead")
    assert dead.task_id.startswith(task_id + "@") and len(dead.task_id.encode()) > 200

    info = await app.get("report", dead.task_id)
    assert info is not None and info.state == "dead" and info.error == "RuntimeError: refused"
    await app.retry("report", dead.task_id, at=from_ms(await app.now_ms() + 3_600_000))
    assert await has_state(app, "report", dead.task_id, "due")
    assert await app.cancel("report", dead.task_id)
    assert await app.get("report", dead.task_id) is None
