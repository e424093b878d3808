"""Failures on each store: retries with back-off, Retry and Abort, time-outs, dead letters."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import duetime
from tests.helpers import eventually, has_state, is_gone, running

FAST = duetime.Backoff(base=timedelta(milliseconds=20), jitter=0)


async def test_a_failing_task_is_retried_with_backoff_then_dead_then_retried_by_hand(
    app: duetime.App,
) -> None:
    attempts: list[tuple[int, int]] = []
    healed = asyncio.Event()

    @app.task(
        "flaky", retries=2, backoff=duetime.Backoff(base=timedelta(milliseconds=100), jitter=0)
    )
    async def flaky(payload: dict[str, Any], ctx: duetime.Context) -> None:
        attempts.append((ctx.attempt, app.clock.now_ms()))
        if not healed.is_set():
            raise ValueError("boom")

    async with running(app):
        await app.schedule("flaky", "f1", payload={"p": 1})
        await eventually(lambda: len(attempts) == 3)
        await eventually(lambda: has_state(app, "flaky", "f1", "dead"))

        info = await app.get("flaky", "f1")
        assert info is not None
        assert (info.state, info.attempts, info.error, info.payload) == (
            "dead",
            3,
            "ValueError: boom",
            {"p": 1},
        )
        assert [a for a, _ in attempts] == [1, 2, 3]
        gaps = [b - a for (_, a), (_, b) in zip(attempts, attempts[1:], strict=False)]
        assert gaps[0] >= 100 and gaps[1] >= 200  # exponential: 100 ms, then 200 ms

        healed.set()
        await app.retry("flaky", "f1")
        await eventually(lambda: len(attempts) == 4)
        await eventually(lambda: is_gone(app, "flaky", "f1"))
    assert attempts[-1][0] == 1  # a revived task starts its attempts afresh


async def test_a_handler_can_ask_for_a_retry_at_a_time_or_give_up(app: duetime.App) -> None:
    seen: list[tuple[str, int, int]] = []

    # Asleep on an hour between claims: the retry runs in time only if the worker is woken.
    @app.task("ctl", retries=3, pacing=duetime.Pacing(max_idle=timedelta(hours=1)))
    async def ctl(payload: dict[str, Any], ctx: duetime.Context) -> None:
        seen.append((ctx.task_id, ctx.attempt, app.clock.now_ms()))
        if payload["mode"] == "later" and ctx.attempt == 1:
            raise duetime.Retry(after=timedelta(milliseconds=250), reason="not yet")
        if payload["mode"] == "abort":
            raise duetime.Abort("the customer is gone")

    async with running(app):
        await app.schedule("ctl", "later", payload={"mode": "later"})
        await app.schedule("ctl", "abort", payload={"mode": "abort"})
        await eventually(lambda: len([s for s in seen if s[0] == "later"]) == 2, within=25)
        await eventually(lambda: has_state(app, "ctl", "abort", "dead"), within=25)
        aborted = await app.get("ctl", "abort")

    later = [s for s in seen if s[0] == "later"]
    assert later[1][1] == 2 and later[1][2] - later[0][2] >= 250  # never before its time
    assert [s for s in seen if s[0] == "abort"] == [seen[[s[0] for s in seen].index("abort")]]
    assert aborted is not None and aborted.error == "the customer is gone"
    assert aborted.traceback is None  # a handler's decision, not a failure to debug


async def test_a_retry_and_a_dead_letter_keep_the_payload_as_scheduled(
    app: duetime.App,
) -> None:
    seen: list[dict[str, Any]] = []

    @app.task("mutating", retries=1, backoff=FAST)
    async def mutating(payload: dict[str, Any]) -> None:
        seen.append(json.loads(json.dumps(payload)))
        payload["items"].append("x")  # the handler's own copy
        payload["count"] = len(seen)
        raise RuntimeError("fails after changing its payload")

    async with running(app):
        await app.schedule("mutating", "m", payload={"items": []})
        await eventually(lambda: has_state(app, "mutating", "m", "dead"))

    assert seen == [{"items": []}, {"items": []}]
    dead = await app.get("mutating", "m")
    assert dead is not None and dead.payload == {"items": []} and dead.attempts == 2


async def test_a_retry_asked_for_at_a_bad_time_falls_back_to_the_backoff(
    app: duetime.App,
) -> None:
    attempts: list[int] = []

    @app.task("confused", retries=1, backoff=FAST)
    async def confused(payload: dict[str, Any], ctx: duetime.Context) -> None:
        attempts.append(ctx.attempt)
        if ctx.attempt == 1:
            raise duetime.Retry(after=datetime(2030, 1, 1))  # naive: no single meaning

    async with running(app):
        await app.schedule("confused", "c")
        await eventually(lambda: is_gone(app, "confused", "c"))

    assert attempts == [1, 2]


async def test_a_hung_handler_times_out_and_is_retried(app: duetime.App) -> None:
    starts: list[int] = []

    @app.task("hang", timeout=0.2, retries=1, backoff=FAST)
    async def hang(payload: dict[str, Any], ctx: duetime.Context) -> None:
        starts.append(ctx.attempt)
        await asyncio.sleep(30)

    async with running(app):
        await app.schedule("hang", "h")
        await eventually(lambda: has_state(app, "hang", "h", "dead"), within=5)
        info = await app.get("hang", "h")

    assert starts == [1, 2]
    assert info is not None and info.error is not None and "timed out" in info.error
    # Where the handler was waiting when its time ran out.
    assert info.traceback is not None and "in hang\n    await asyncio.sleep(30)" in info.traceback


def _explode(attempt: int) -> None:
    raise ValueError(f"attempt {attempt} failed")


def _first_frame(trace: str) -> str:
    return next(line for line in trace.splitlines() if line.startswith('  File "'))


async def test_a_dead_letter_keeps_the_traceback_of_its_last_attempt_until_retried(
    app: duetime.App,
) -> None:
    @app.task("crash", retries=1, backoff=FAST)
    async def crash(payload: dict[str, Any], ctx: duetime.Context) -> None:
        _explode(ctx.attempt)

    async with running(app):
        await app.schedule("crash", "c1")
        await eventually(lambda: has_state(app, "crash", "c1", "dead"))

    info = await app.get("crash", "c1")
    assert info is not None and info.error == "ValueError: attempt 2 failed"
    trace = info.traceback
    assert trace is not None and trace.startswith("Traceback (most recent call last):\n")
    # From the handler's own frame (none of the worker's above it) to the exception.
    assert _first_frame(trace).endswith(", in crash") and __file__ in _first_frame(trace)
    assert "in _explode\n" in trace and trace.endswith("ValueError: attempt 2 failed\n")
    assert "attempt 1" not in trace
    listed = await app.list("crash", "dead")
    assert [t.traceback for t in listed] == [trace]

    # Run again by hand, it starts afresh: no traceback until it fails again.
    await app.retry("crash", "c1", at=datetime.now(UTC) + timedelta(hours=1))
    again = await app.get("crash", "c1")
    assert again is not None and (again.state, again.traceback) == ("due", None)


async def test_a_retry_that_waits_shows_the_traceback_of_the_attempt_before(
    app: duetime.App,
) -> None:
    @app.task("crashSync", retries=1, backoff=duetime.Backoff(base=timedelta(hours=1)))
    def crash_sync(payload: dict[str, Any], ctx: duetime.Context) -> None:  # in a thread
        _explode(ctx.attempt)

    async with running(app):
        await app.schedule("crashSync", "s1")
        await eventually(lambda: has_failed(app, "crashSync", "s1"))

    info = await app.get("crashSync", "s1")
    assert info is not None and info.state == "due" and info.attempts == 1
    assert info.traceback is not None and _first_frame(info.traceback).endswith(", in crash_sync")
    assert info.traceback.endswith("ValueError: attempt 1 failed\n")


async def has_failed(app: duetime.App, task_type: str, task_id: str) -> bool:
    info = await app.get(task_type, task_id)
    return info is not None and info.error is not None
