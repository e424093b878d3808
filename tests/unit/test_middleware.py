"""Middleware without a store: what is accepted, the chain's order, results, skips, a
second call_next, sync handlers in their thread, and the time limit around the chain."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, cast

import pytest

import duetime
from duetime.middleware import CallNext, check_middleware
from duetime.model import Pacing, TaskPolicy
from duetime.tasktype import TaskType, call_mode
from duetime.worker.handler import TimedOut, call_handler
from duetime.worker.wrapped import chain_of, through


class Note(duetime.Middleware):
    """Notes its name on the way in and out."""

    def __init__(self, name: str, seen: list[str]) -> None:
        self.name, self.seen = name, seen

    async def __call__(self, ctx: duetime.Context, call_next: CallNext) -> Any:
        self.seen.append(f"{self.name}>")
        result = await call_next()
        self.seen.append(f"<{self.name}")
        return result


def context() -> duetime.Context:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    return duetime.Context("t", "id", when, 1, "id@0", 1, cast("duetime.Client", None))


def task_type(handler: Any) -> TaskType:
    kind = TaskType("t", None, TaskPolicy(), Pacing())
    kind.bind(handler, call_mode(handler))
    return kind


async def plain(ctx: duetime.Context, call_next: CallNext) -> Any:
    return await call_next()


def test_middleware_instances_and_async_callables_of_ctx_and_call_next_are_accepted() -> None:
    base = duetime.Middleware()
    assert check_middleware([base, plain]) == (base, plain)
    assert check_middleware(None) == () == check_middleware(())


@pytest.mark.parametrize(
    ("given", "field"),
    [
        (Note, "middleware"),  # not a list
        ("Note", "middleware"),
        ([duetime.Middleware], "middleware[0]"),  # the class, not an instance
        ([plain, lambda ctx, call_next: None], "middleware[1]"),  # not async
        ([plain, plain, 3], "middleware[2]"),
    ],
)
def test_anything_else_is_refused_naming_the_item(given: Any, field: str) -> None:
    with pytest.raises(duetime.ValidationError) as caught:
        check_middleware(given)
    assert caught.value.field == field


def test_the_app_and_a_task_type_refuse_bad_middleware() -> None:
    with pytest.raises(duetime.ValidationError, match=r"middleware\[0\]"):
        duetime.App("sqlite:///unused.db", middleware=[print])  # type: ignore[list-item]
    app = duetime.App("sqlite:///unused.db")
    with pytest.raises(duetime.ValidationError, match=r"middleware\[0\]"):
        app.task("t", middleware=[duetime.Middleware])  # type: ignore[list-item]
    assert "t" not in app.types


async def test_the_chain_runs_outermost_first_around_the_handler_and_returns_its_result() -> None:
    seen: list[str] = []

    async def handler() -> str:
        seen.append("handler")
        return "result"

    chain = chain_of([Note("app", seen)], [Note("own", seen)])
    assert await through(chain, context(), handler) == "result"
    assert seen == ["app>", "own>", "handler", "<own", "<app"]


async def test_what_a_middleware_returns_or_raises_is_the_runs_and_one_may_skip_the_rest() -> None:
    ran: list[str] = []

    async def handler() -> str:
        ran.append("handler")
        return "handler's"

    async def replace(ctx: duetime.Context, call_next: CallNext) -> Any:
        await call_next()
        return "middleware's"

    async def skip(ctx: duetime.Context, call_next: CallNext) -> Any:
        return None

    async def refuse(ctx: duetime.Context, call_next: CallNext) -> Any:
        raise duetime.Retry(reason="not now")

    assert await through((replace,), context(), handler) == "middleware's"
    assert await through((skip, replace), context(), handler) is None
    with pytest.raises(duetime.Retry):
        await through((refuse,), context(), handler)
    assert ran == ["handler"]


async def test_call_next_runs_the_handler_once_at_most() -> None:
    ran: list[str] = []

    async def handler() -> None:
        ran.append("handler")

    async def twice(ctx: duetime.Context, call_next: CallNext) -> Any:
        await call_next()
        return await call_next()

    with pytest.raises(RuntimeError, match="call_next was called twice"):
        await through((twice,), context(), handler)
    assert ran == ["handler"]


async def test_a_sync_handlers_middleware_runs_in_the_loop_around_its_thread() -> None:
    threads: list[tuple[str, str]] = []

    def handler(payload: dict[str, Any]) -> int:
        threads.append(("handler", threading.current_thread().name))
        return int(payload["n"]) + 1

    async def where(ctx: duetime.Context, call_next: CallNext) -> Any:
        threads.append(("middleware", threading.current_thread().name))
        return await call_next()

    with ThreadPoolExecutor(1, thread_name_prefix="handler") as pool:
        result = await call_handler(task_type(handler), None, {"n": 1}, context(), pool, (where,))
    assert result == 2
    loop_thread = threading.current_thread().name
    assert threads[0] == ("middleware", loop_thread)
    assert threads[1][0] == "handler" and threads[1][1] != loop_thread


async def test_the_time_limit_cuts_through_a_middleware_that_waits() -> None:
    cut: list[str] = []

    async def handler(payload: dict[str, Any]) -> None:
        await asyncio.Event().wait()

    async def waits(ctx: duetime.Context, call_next: CallNext) -> Any:
        try:
            await asyncio.Event().wait()  # never set: only the limit ends this
        except asyncio.CancelledError:
            cut.append("middleware")
            raise

    with pytest.raises(TimedOut, match="timed out after 0.05 s"):
        await call_handler(task_type(handler), 0.05, {}, context(), None, (waits,))
    assert cut == ["middleware"]

    release = threading.Event()

    def blocking(payload: dict[str, Any]) -> None:
        release.wait(10)  # a thread cannot be cut short: it runs on until released

    try:
        with pytest.raises(TimedOut, match="its thread runs on"):
            await call_handler(task_type(blocking), 0.05, {}, context(), None, (plain,))
    finally:
        release.set()


def test_only_middleware_that_overrides_producing_adds_to_a_tasks_metadata() -> None:
    class Stamp(duetime.Middleware):
        def producing(self, meta: dict[str, Any] | None) -> dict[str, Any] | None:
            return {**(meta or {}), "stamped": True}

    plain_app = duetime.App("sqlite:///unused.db", middleware=[duetime.Middleware(), plain])
    assert plain_app.registry.producing == ()
    task = duetime.Task("t", "i", meta={"k": 1})
    assert plain_app.registry.stamped(task) is task
    app = duetime.App("sqlite:///unused.db", middleware=[Stamp(), Stamp()])
    assert app.registry.stamped(task).meta == {"k": 1, "stamped": True}
    assert app.registry.stamped(duetime.Task("t", "i")).meta == {"stamped": True}
