"""Live workers and the last hour's counts, as a user reads them with ``App.workers()`` and
``App.history()``: from another App than the workers', on Redis, SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import os
import socket
from pathlib import Path

import pytest

import duetime
from duetime.features.telemetry.presence import LAPSE_SECONDS
from duetime.stores.capabilities import TELEMETRY, use
from tests.faults.harness import Workers
from tests.helpers import eventually, running
from tests.servers import RedisServer


@pytest.fixture
def url(any_store_url: str) -> str:
    return any_store_url


async def test_a_running_worker_is_listed_with_what_it_runs_and_gone_when_it_stops(
    url: str, namespace: str
) -> None:
    app = duetime.App(url, namespace=namespace)
    release = asyncio.Event()

    @app.task("mail")
    async def mail(payload: object) -> None:
        await release.wait()

    @app.task("report")
    async def report(payload: object) -> None: ...

    watcher = duetime.App(url, namespace=namespace)
    try:
        assert await watcher.workers() == []
        await app.schedule("mail", "m1")
        async with running(app) as worker:
            await eventually(lambda: worker.running["mail"] == 1)

            async def listed() -> bool:
                found = await watcher.workers()
                return len(found) == 1 and found[0].running.get("mail") == 1

            await eventually(listed, within=10, what="the worker listed, running one mail")
            (info,) = await watcher.workers()
            assert info.id == worker.id
            assert (info.host, info.pid) == (socket.gethostname(), os.getpid())
            assert info.types == ("mail", "report")
            assert info.namespace == namespace and info.version == duetime.__version__
            assert info.last_claim is not None and info.started <= info.last_claim <= info.seen
            release.set()
        assert await watcher.workers() == []  # a worker that stops leaves at once
    finally:
        await watcher.close()
        await app.close()


async def _settled(app: duetime.App) -> bool:
    return await app.counts("mail") == {"due": 0, "running": 0, "dead": 1}


async def test_history_counts_what_ran_failed_retried_and_died(url: str, namespace: str) -> None:
    app = duetime.App(url, namespace=namespace)
    runs: dict[str, int] = {}

    @app.task("mail", retries=1, backoff=0.05)
    async def mail(payload: dict[str, str]) -> None:
        runs[payload["id"]] = runs.get(payload["id"], 0) + 1
        if payload["id"].startswith("bad"):
            raise RuntimeError("no")
        if payload["id"] == "flaky" and runs["flaky"] == 1:
            raise RuntimeError("once")

    watcher = duetime.App(url, namespace=namespace)
    try:
        ids = ["ok1", "ok2", "ok3", "flaky", "bad"]
        for task_id in ids:
            await app.schedule("mail", task_id, payload={"id": task_id})
        async with running(app):
            await eventually(lambda: runs.get("bad") == 2 and runs.get("flaky") == 2, within=25)
            # The last outcomes settled: nothing due or running, the dead one filed.
            await eventually(lambda: _settled(app), within=25, what="every outcome settled")
        # The worker added its counts as it stopped.
        history = await watcher.history(minutes=5)
        mail_history = history["mail"]
        assert len(mail_history.minutes) == 5
        assert mail_history.total("fired") == 7  # 3 ok, flaky twice, bad twice
        assert mail_history.total("succeeded") == 4
        assert mail_history.total("failed") == 3
        assert mail_history.total("retried") == 2
        assert mail_history.total("dead_lettered") == 1
        assert sum(sum(m.lateness.values()) for m in mail_history.minutes) == 7
        assert mail_history.lateness_quantile(0.5) is not None
        with pytest.raises(duetime.ValidationError, match="minutes"):
            await watcher.history(minutes=61)
    finally:
        await watcher.close()
        await app.close()


@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_a_killed_worker_lapses_from_the_list(
    redis_server: RedisServer, namespace: str, tmp_path: Path
) -> None:
    workers = Workers(tmp_path)
    watcher = duetime.App(redis_server.url, namespace=namespace)
    try:
        proc = workers.start(redis_server.url, namespace)
        proc.wait_ready()

        async def pids() -> set[int]:
            return {w.pid for w in await watcher.workers()}

        await eventually(lambda: _has(pids(), proc.pid), within=25, what="the worker listed")
        await asyncio.to_thread(proc.kill)  # and reaped: it beats no more
        # The store asked with a `now` of the test's (no waiting out the lapse): its last
        # beat lists it until LAPSE_SECONDS after it, then not (it lapsed: it had no
        # chance to leave).
        telemetry = use(await watcher.open(), TELEMETRY).telemetry
        (last,) = [
            doc
            for doc in map(json.loads, await telemetry.workers(await watcher.now_ms()))
            if doc["pid"] == proc.pid
        ]
        lapse = last["seen_ms"] + int(LAPSE_SECONDS * 1000)

        async def listed(now_ms: int) -> bool:
            found = map(json.loads, await telemetry.workers(now_ms))
            return proc.pid in {doc["pid"] for doc in found}

        assert await listed(lapse - 1) and await listed(lapse)
        assert not await listed(lapse + 1)
    finally:
        workers.cleanup()
        await watcher.close()


async def _has(found: asyncio.Future[set[int]] | object, pid: int) -> bool:
    return pid in await found  # type: ignore[misc]


async def test_a_pollers_calls_and_failed_calls_are_counted(url: str, namespace: str) -> None:
    app = duetime.App(url, namespace=namespace)
    calls: list[int] = []

    def quick(attempt: int) -> float:
        return 0.05

    @app.poller("scan", delay=quick)
    async def scan(ctx: duetime.PollContext) -> list[str]:
        calls.append(ctx.attempt)
        raise RuntimeError("the source is down")

    @scan.handler
    async def handle(payload: object) -> None: ...

    try:
        async with running(app):
            await eventually(lambda: len(calls) >= 3, within=10)
        ticks = (await app.history(minutes=2))["duetime.poller.scan"]
        assert ticks.total("fired") >= 3
        assert ticks.total("failed") >= 3 and ticks.total("failed") <= ticks.total("fired")
    finally:
        await app.close()
