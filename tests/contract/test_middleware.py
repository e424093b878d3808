"""Middleware on each store: the App's around each type's, for every trigger kind; what it
returns and raises (retries, RateLimited), skips, sync handlers, time limits and aborts."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

import duetime
from duetime.middleware import CallNext
from duetime.triggers.poll import tick_type
from tests.helpers import eventually, has_state, is_gone, running

FAST = duetime.Backoff(base=timedelta(milliseconds=20), jitter=0)


class Note(duetime.Middleware):
    """Notes ``(name, direction, task type, attempt)`` on the way in and out."""

    def __init__(self, name: str, seen: list[tuple[str, str, str, int]]) -> None:
        self.name, self.seen = name, seen

    async def __call__(self, ctx: duetime.Context, call_next: CallNext) -> Any:
        self.seen.append((self.name, ">", ctx.task_type, ctx.attempt))
        try:
            return await call_next()
        finally:
            self.seen.append((self.name, "<", ctx.task_type, ctx.attempt))


class Cut(duetime.Middleware):
    """Notes the ids of the runs cut short (a CancelledError where it awaits)."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    async def __call__(self, ctx: duetime.Context, call_next: CallNext) -> Any:
        try:
            return await call_next()
        except asyncio.CancelledError:
            self.ids.append(ctx.task_id)
            raise


@pytest.fixture
async def seen_app(
    store_url: str, namespace: str
) -> AsyncIterator[tuple[duetime.App, list[tuple[str, str, str, int]]]]:
    seen: list[tuple[str, str, str, int]] = []
    app = duetime.App(
        store_url, namespace=namespace, middleware=[Note("outer", seen), Note("inner", seen)]
    )
    await app.open()
    yield app, seen
    await app.close()


async def test_the_apps_middleware_wraps_each_types_own_for_every_trigger_kind(
    seen_app: tuple[duetime.App, list[tuple[str, str, str, int]]],
) -> None:
    app, seen = seen_app
    ran: list[str] = []

    @app.task("once", middleware=[Note("own", seen)])
    async def once(payload: dict[str, Any]) -> None:
        seen.append(("handler", "", "once", 1))
        ran.append("once")

    @app.task("every")
    async def every(payload: dict[str, Any]) -> None:
        ran.append("every")

    @app.cron("* * * * * *", name="tick")
    async def tick(ctx: duetime.Context) -> None:
        ran.append("tick")

    cache = app.expiring("cache", ttl=timedelta(milliseconds=200))

    @cache.on_expire
    async def expired(key: str, value: Any, ctx: duetime.Context) -> None:
        ran.append("expired")

    handed: list[str] = []

    @app.poller("poll", delay=lambda attempt: 0.05)
    async def source(ctx: duetime.PollContext) -> list[str]:
        given, handed[:] = handed[:], []
        return given

    @source.handler
    async def instruction(item: str, ctx: duetime.Context) -> None:
        ran.append(f"instruction {item}")

    async with running(app):
        handed.append("a")
        await app.schedule("once", "o1")
        await app.schedule("every", "e1", every=timedelta(milliseconds=100), limit=2)
        await cache.put("k", 1)
        wanted = {"once", "every", "tick", "expired", "instruction a"}
        await eventually(lambda: wanted <= set(ran), within=10, what="every kind ran")

    runs = [s for s in seen if s[0] != "handler"]
    kinds = {kind for _, _, kind, _ in runs}
    assert {"once", "every", "tick", "cache", "poll", tick_type("poll")} <= kinds
    first_once = [s[:2] for s in seen if s[2] == "once"]
    assert first_once == [
        ("outer", ">"),
        ("inner", ">"),
        ("own", ">"),
        ("handler", ""),
        ("own", "<"),
        ("inner", "<"),
        ("outer", "<"),
    ]
    assert not any(name == "own" for name, _, kind, _ in seen if kind != "once")


async def test_a_failure_raised_by_middleware_is_retried_and_rate_limited_holds_the_task(
    app: duetime.App,
) -> None:
    attempts: list[int] = []
    held: list[int] = []

    async def fail_first(ctx: duetime.Context, call_next: CallNext) -> Any:
        if ctx.task_id == "held" and not held:
            held.append(ctx.attempt)
            raise duetime.RateLimited(after=timedelta(milliseconds=50))
        if ctx.task_id == "flaky" and ctx.attempt == 1:
            raise ValueError("the tenant's database is down")
        return await call_next()

    @app.task("guarded", retries=2, backoff=FAST, middleware=[fail_first])
    async def guarded(payload: dict[str, Any], ctx: duetime.Context) -> None:
        attempts.append(ctx.attempt)

    async with running(app):
        await app.schedule("guarded", "flaky")
        await app.schedule("guarded", "held")
        await eventually(lambda: len(attempts) == 2, what="both ran")
        await eventually(lambda: is_gone(app, "guarded", "flaky"))
        await eventually(lambda: is_gone(app, "guarded", "held"))
    # The flaky one ran on its second attempt; the held one on its first (no attempt counted).
    assert sorted(attempts) == [1, 2] and held == [1]


async def test_a_middleware_that_does_not_call_next_skips_the_handler_and_the_run_is_done(
    app: duetime.App,
) -> None:
    asked: list[str] = []
    ran: list[str] = []

    async def skip(ctx: duetime.Context, call_next: CallNext) -> Any:
        asked.append(ctx.task_id)
        return None

    @app.task("skipped", middleware=[skip])
    async def skipped(payload: dict[str, Any]) -> None:
        ran.append("ran")

    async with running(app):
        await app.schedule("skipped", "s1")
        await eventually(lambda: asked == ["s1"])
        await eventually(lambda: is_gone(app, "skipped", "s1"))
    assert ran == []
    assert await app.counts("skipped") == {"due": 0, "running": 0, "dead": 0}


async def test_a_sync_handlers_middleware_runs_in_the_event_loop(app: duetime.App) -> None:
    threads: dict[str, str] = {}

    async def where(ctx: duetime.Context, call_next: CallNext) -> Any:
        threads["middleware"] = threading.current_thread().name
        return await call_next()

    @app.task("sync", middleware=[where])
    def sync(payload: dict[str, Any]) -> None:
        threads["handler"] = threading.current_thread().name

    async with running(app):
        await app.schedule("sync", "s1")
        await eventually(lambda: is_gone(app, "sync", "s1"))
    assert threads["middleware"] == threading.current_thread().name
    assert threads["handler"] != threads["middleware"]


async def test_the_time_limit_cuts_through_middleware_and_fails_the_attempt(
    app: duetime.App,
) -> None:
    cut = Cut()

    @app.task("slow", timeout=0.2, retries=0, middleware=[cut])
    async def slow(payload: dict[str, Any]) -> None:
        await asyncio.Event().wait()  # never set: only the time limit ends it

    async with running(app):
        await app.schedule("slow", "s1")
        await eventually(lambda: has_state(app, "slow", "s1", "dead"))
    info = await app.get("slow", "s1")
    assert info is not None and info.error is not None and "timed out" in info.error
    assert cut.ids == ["s1"]


async def test_an_abort_cuts_through_middleware_and_the_task_is_not_retried(
    app: duetime.App,
) -> None:
    started = asyncio.Event()
    cut = Cut()

    @app.task("long", retries=3, middleware=[cut])
    async def long(payload: dict[str, Any]) -> None:
        started.set()
        await asyncio.Event().wait()

    async with running(app):
        await app.schedule("long", "l1")
        await asyncio.wait_for(started.wait(), 10)
        assert await app.abort("long", "l1") == "aborted"
        await eventually(lambda: cut.ids == ["l1"], what="the middleware was cut")
        await eventually(lambda: _not_pending(app, "long", "l1"), what="the task ended")


async def _not_pending(app: duetime.App, task_type: str, task_id: str) -> bool:
    info = await app.get(task_type, task_id)
    return info is None or info.state == "dead"
