"""A task type: how its handler is called, its reschedule hook, and its own schedule call."""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import duetime
from duetime.model import Pacing, TaskPolicy
from duetime.tasktype import TaskType, call_mode, is_async_callable
from duetime.testing import harness


def test_the_call_mode_follows_the_signature() -> None:
    assert call_mode(lambda payload: None, cron=False) == "payload"
    assert call_mode(lambda ctx: None, cron=True) == "ctx"
    assert call_mode(lambda payload, ctx: None, cron=False) == "both"
    assert call_mode(lambda *args: None, cron=True) == "both"
    with pytest.raises(duetime.ValidationError, match=r"\(payload\) or \(payload, ctx\)"):
        call_mode(lambda: None, cron=False)
    with pytest.raises(duetime.ValidationError, match="must be callable"):
        call_mode("not a function", cron=False)  # type: ignore[arg-type]


def test_a_task_type_is_called_like_its_handler() -> None:
    task_type = TaskType("t", lambda payload: payload["n"] + 1, TaskPolicy(), Pacing())
    assert task_type({"n": 1}) == 2
    assert task_type.args({"n": 1}, "ctx") == ({"n": 1},)
    declared = TaskType("d", None, TaskPolicy(), Pacing())
    with pytest.raises(TypeError, match="declared without a handler"):
        declared({})


async def test_the_hook_is_asked_sync_or_async_with_or_without_the_context() -> None:
    task_type = TaskType("t", lambda payload: None, TaskPolicy(), Pacing())
    assert await task_type.ask_hook({}, "ctx") is True  # no hook: go on

    @task_type.reschedule
    def sync_hook(payload: dict[str, Any]) -> bool:
        return bool(payload["go"])

    assert await task_type.ask_hook({"go": False}, "ctx") is False

    seen: list[Any] = []

    @task_type.reschedule
    async def async_hook(payload: dict[str, Any], ctx: Any) -> bool:
        seen.append(ctx)
        return bool(payload["go"])

    assert await task_type.ask_hook({"go": True}, "ctx") is True
    assert seen == ["ctx"]
    with pytest.raises(duetime.ValidationError, match="must be callable"):
        task_type.reschedule(42)  # type: ignore[arg-type]


async def test_a_type_schedules_through_its_app() -> None:
    calls: list[tuple[str, str, dict[str, Any]]] = []
    at = datetime(2031, 1, 1, tzinfo=UTC)

    async def scheduler(task_type: str, task_id: str, **options: Any) -> datetime:
        calls.append((task_type, task_id, options))
        return at

    task_type = TaskType("t", lambda payload: None, TaskPolicy(), Pacing(), scheduler=scheduler)
    assert await task_type.schedule("a", at=at) == at
    assert calls == [("t", "a", {"at": at})]
    with pytest.raises(TypeError, match="belongs to no app"):
        await TaskType("x", None, TaskPolicy(), Pacing()).schedule("a")


@pytest.mark.parametrize("given", [0.05, timedelta(milliseconds=50)])
def test_a_number_or_timedelta_as_backoff_is_the_same_wait_before_every_retry(
    given: float | timedelta,
) -> None:
    app = duetime.App("sqlite:///unused.db")

    @app.task("mail", backoff=given)
    async def mail(payload: object) -> None: ...

    backoff = app.task_type("mail").policy.backoff
    assert [backoff.delay_ms(n) for n in (1, 2, 5)] == [50, 50, 50]


def test_a_backoff_of_zero_retries_at_once_and_a_negative_one_is_refused() -> None:
    app = duetime.App("sqlite:///unused.db")

    @app.task("mail", backoff=0)
    async def mail(payload: object) -> None: ...

    backoff = app.task_type("mail").policy.backoff
    assert [backoff.delay_ms(n) for n in (1, 2, 5)] == [0, 0, 0]
    assert duetime.Backoff(base=timedelta(0)).delay_ms(3) == 0
    with pytest.raises(duetime.ValidationError, match="backoff"):
        duetime.Backoff.fixed(-1)


@pytest.mark.parametrize("given", ["1s", True, [1]])
def test_a_backoff_of_another_kind_is_refused_at_registration(given: object) -> None:
    app = duetime.App("sqlite:///unused.db")
    with pytest.raises(duetime.ValidationError, match="backoff"):

        @app.task("mail", backoff=given)  # type: ignore[arg-type]
        async def mail(payload: object) -> None: ...


class _AsyncCallable:
    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    async def __call__(self, payload: dict[str, Any]) -> None:
        self.seen.append(payload)


def test_an_object_with_an_async_call_is_an_async_handler() -> None:
    async def coro(payload: dict[str, Any], extra: int) -> None: ...

    assert is_async_callable(_AsyncCallable())
    assert is_async_callable(functools.partial(coro, extra=1))
    assert not is_async_callable(lambda payload: None)
    assert not is_async_callable(_AsyncCallable)  # the class itself makes an object
    assert TaskType("t", _AsyncCallable(), TaskPolicy(), Pacing()).is_async


async def test_an_async_callable_object_runs_and_is_awaited(tmp_path: Path) -> None:
    app = duetime.App(f"sqlite:///{tmp_path / 'd.db'}")
    handler = _AsyncCallable()
    app.task("objectHandler")(handler)
    async with harness(app) as h:
        await app.schedule("objectHandler", "o1", payload={"n": 1})
        runs = await h.run_due()
    assert [(r.task_id, r.outcome) for r in runs] == [("o1", "done")]
    assert handler.seen == [{"n": 1}]
