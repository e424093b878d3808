"""Results on each store: what a handler returns is kept with its run in the run history,
read back by ``app.result`` (at once, or waiting for the run to finish) and ``app.get``; a
dead run raises TaskFailed; a result over 64 KiB, or not JSON, sends its task to the dead
letters with the reason."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import duetime
from tests.helpers import running

#: Results of every JSON kind, by task id.
RESULTS: dict[str, Any] = {
    "dict": {"rows": 1200, "nested": {"ok": [1, 2.5, None]}},
    "list": [1, "two", {"three": 3}],
    "str": "héllo",
    "int": 42,
    "float": 2.5,
    "bool": False,
    "none": None,
}


async def test_every_json_result_is_kept_and_read_back(app: duetime.App) -> None:
    @app.task("plain")  # no context: the worker's hot path
    async def plain(payload: dict[str, Any]) -> Any:
        return RESULTS[payload["kind"]]

    @app.task("ctx")  # a context: the executor's inline path
    async def with_ctx(payload: dict[str, Any], ctx: duetime.Context) -> Any:
        await asyncio.sleep(0)
        return RESULTS[ctx.task_id]

    @app.task("threaded")  # a plain def: run in a thread
    def threaded(payload: dict[str, Any]) -> Any:
        return RESULTS[payload["kind"]]

    async with running(app):
        for kind in RESULTS:
            await app.schedule("plain", kind, payload={"kind": kind})
            await app.schedule("ctx", kind)
            await app.schedule("threaded", kind, payload={"kind": kind})
        for task_type in ("plain", "ctx", "threaded"):
            for kind, expected in RESULTS.items():
                got = await app.result(task_type, kind, wait=timedelta(seconds=10))
                assert got == expected, (task_type, kind)
                assert await app.result(task_type, kind) == expected  # and again, at once

    runs = await app.history("plain", task_id="dict")
    assert [r.result for r in runs] == [RESULTS["dict"]]
    assert [r.result for r in await app.history("plain", task_id="none")] == [None]


async def test_a_retried_run_keeps_the_result_of_the_attempt_that_finished(
    app: duetime.App,
) -> None:
    @app.task("flaky", retries=2, backoff=duetime.Backoff(base=timedelta(milliseconds=10)))
    async def flaky(payload: dict[str, Any], ctx: duetime.Context) -> dict[str, int]:
        if ctx.attempt == 1:
            raise ValueError("first try")
        return {"attempt": ctx.attempt}

    async with running(app):
        await app.schedule("flaky", "f1")
        assert await app.result("flaky", "f1", wait=10) == {"attempt": 2}
    outcomes = [(r.attempt, r.outcome, r.result) for r in await app.history("flaky")]
    assert outcomes == [(2, "done", {"attempt": 2}), (1, "failed", None)]


async def test_result_waits_for_the_run_to_finish(app: duetime.App) -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    @app.task("slow")
    async def slow(payload: dict[str, Any]) -> str:
        started.set()
        await release.wait()
        return "finished"

    async with running(app):
        await app.schedule("slow", "s1")
        waiting = asyncio.create_task(app.result("slow", "s1", wait=timedelta(seconds=10)))
        await asyncio.wait_for(started.wait(), 10)
        assert not waiting.done()  # the run has not ended: nothing to return yet
        release.set()
        assert await waiting == "finished"
        assert [r.outcome for r in await app.history("slow", task_id="s1")] == ["done"]


async def test_result_waits_for_a_task_not_yet_written(app: duetime.App) -> None:
    @app.task("later")
    async def later(payload: dict[str, Any]) -> int:
        return 7

    async with running(app):
        waiting = asyncio.create_task(app.result("later", "l1", wait=10))
        await asyncio.sleep(0)
        await app.schedule("later", "l1")
        assert await waiting == 7


async def test_a_dead_run_raises_task_failed(app: duetime.App) -> None:
    @app.task("bad", retries=0)
    async def bad(payload: dict[str, Any]) -> int:
        raise RuntimeError("broken for good")

    async with running(app):
        await app.schedule("bad", "b1")
        with pytest.raises(duetime.TaskFailed) as caught:
            await app.result("bad", "b1", wait=10)
    assert caught.value.task_type == "bad" and caught.value.task_id == "b1"
    assert caught.value.error == "RuntimeError: broken for good"
    assert caught.value.traceback is not None and "broken for good" in caught.value.traceback
    with pytest.raises(duetime.TaskFailed):  # without a wait too
        await app.result("bad", "b1")
    info = await app.get("bad", "b1")
    assert info is not None and info.state == "dead" and info.result is None


async def test_result_times_out_as_asked(app: duetime.App) -> None:
    @app.task("never")
    async def never(payload: dict[str, Any]) -> int:
        return 1

    await app.schedule("never", "n1", at=datetime.now(UTC) + timedelta(days=1))
    async with running(app):
        with pytest.raises(TimeoutError, match="never/n1"):
            await app.result("never", "n1", wait=timedelta(milliseconds=200))
    with pytest.raises(duetime.TaskNotFound, match="finished"):
        await app.result("never", "n1")  # no run finished: nothing to return


async def test_a_result_over_64_kib_sends_the_task_to_the_dead_letters(
    app: duetime.App,
) -> None:
    @app.task("big", retries=3)
    async def big(payload: dict[str, Any]) -> str:
        return "x" * int(payload["n"])

    async with running(app):
        await app.schedule("big", "fits", payload={"n": 65536 - 2})  # its JSON: 64 KiB exactly
        await app.schedule("big", "over", payload={"n": 65536 - 1})
        assert await app.result("big", "fits", wait=10) == "x" * (65536 - 2)
        with pytest.raises(duetime.TaskFailed) as caught:
            await app.result("big", "over", wait=10)
    reason = "result too big: 65,537 bytes of JSON, at most 65,536 (64 KiB)"
    assert caught.value.error == reason
    dead = await app.list("big", "dead")
    assert [(t.task_id, t.error) for t in dead] == [("over", reason)]  # not retried


async def test_a_result_that_is_not_json_sends_the_task_to_the_dead_letters(
    app: duetime.App,
) -> None:
    @app.task("odd")
    async def odd(payload: dict[str, Any]) -> object:
        return {"when": datetime(2026, 1, 1, tzinfo=UTC)}

    async with running(app):
        await app.schedule("odd", "o1")
        with pytest.raises(duetime.TaskFailed, match="result is not JSON"):
            await app.result("odd", "o1", wait=10)


async def test_a_series_result_and_task_info(app: duetime.App) -> None:
    @app.task("tick")
    async def tick(payload: dict[str, Any], ctx: duetime.Context) -> dict[str, int]:
        return {"occurrence": int(ctx.occurrence.rpartition("@")[2])}

    async with running(app):
        await app.schedule("tick", "t1", every=timedelta(milliseconds=50))
        first = await app.result("tick", "t1", wait=10)
        second = await app.result("tick", "t1", wait=10)  # the series runs on: its next run
    assert second["occurrence"] > first["occurrence"]
    info = await app.get("tick", "t1")  # the series stays, due again
    assert info is not None and info.kind == "periodic"
    assert info.result == await app.result("tick", "t1")
    assert info.result["occurrence"] >= second["occurrence"]
    await app.cancel("tick", "t1")


async def test_a_type_without_a_history_keeps_no_result(app: duetime.App) -> None:
    done = asyncio.Event()

    @app.task("quiet", history=False)
    async def quiet(payload: dict[str, Any]) -> int:
        done.set()
        return 1

    async with running(app):
        await app.schedule("quiet", "q1")
        await asyncio.wait_for(done.wait(), 10)
    with pytest.raises(duetime.TaskNotFound):
        await app.result("quiet", "q1")


async def test_a_partitioned_type_keeps_each_tasks_result(app: duetime.App) -> None:
    @app.task("split", partitions=4)
    async def split(payload: dict[str, Any], ctx: duetime.Context) -> str:
        return ctx.task_id.upper()

    async with running(app):
        for n in range(8):
            await app.schedule("split", f"s{n}")
        for n in range(8):
            assert await app.result("split", f"s{n}", wait=10) == f"S{n}"
