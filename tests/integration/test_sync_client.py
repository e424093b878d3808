"""The blocking client: calls from many threads, and a close() that leaves no thread hanging."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import duetime
from tests.helpers import eventually, running
from tests.servers import RedisServer

THREADS = 8


def _hammer(client: duetime.SyncClient, n: int, outcomes: list[str]) -> None:
    """Schedule until the client is closed; note how each thread's calls ended."""
    try:
        for k in range(10_000):
            client.schedule("job", f"t{n}-{k}", delay=3600)
    except duetime.ClientClosed:
        outcomes.append("closed")
    except Exception as exc:  # any other ending is what the test looks for
        outcomes.append(f"{type(exc).__name__}: {exc}")
    else:
        outcomes.append("done")


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_close_while_threads_call_ends_every_call_with_a_clear_error(
    kind: str, tmp_path: Path, redis_url: str, namespace: str
) -> None:
    url = f"sqlite:///{tmp_path / 'sync.db'}" if kind == "sqlite" else redis_url
    app = duetime.App(url, namespace=namespace)
    app.declare("job")
    client = app.sync()
    outcomes: list[str] = []
    threads = [
        threading.Thread(target=_hammer, args=(client, n, outcomes), daemon=True)
        for n in range(THREADS)
    ]
    for thread in threads:
        thread.start()
    time.sleep(0.3)  # every thread is calling
    client.close()
    for thread in threads:
        thread.join(10)

    assert not [t for t in threads if t.is_alive()], "a thread is still blocked in a call"
    assert outcomes == ["closed"] * THREADS
    with pytest.raises(duetime.ClientClosed, match="closed"):
        client.get("job", "t0-0")


def test_close_with_calls_stuck_on_the_server_returns_within_its_bound(namespace: str) -> None:
    with RedisServer() as server:
        app = duetime.App(server.url, namespace=namespace)
        app.declare("job")
        client = app.sync()
        client.counts("job")  # connected
        outcomes: list[str] = []
        admin = server.client()
        try:
            admin.client_pause(5000)  # the server answers no one for 5 s
            threads = [
                threading.Thread(target=_hammer, args=(client, n, outcomes), daemon=True)
                for n in range(THREADS)
            ]
            for thread in threads:
                thread.start()
            time.sleep(0.2)
            started = time.monotonic()
            client.close(timeout=0.5)
            took = time.monotonic() - started
            for thread in threads:
                thread.join(5)
        finally:
            admin.client_unpause()
            admin.close()

    assert took < 3, took
    assert not [t for t in threads if t.is_alive()], "a thread is still blocked in a call"
    assert outcomes == ["closed"] * THREADS


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_an_operators_calls_from_blocking_code(
    kind: str, tmp_path: Path, redis_url: str, namespace: str
) -> None:
    """Pause and resume a type, read its run history, and drive a cron schedule, from a
    script or a view that is not async, against a real worker."""
    url = f"sqlite:///{tmp_path / 'ops.db'}" if kind == "sqlite" else redis_url
    app = duetime.App(url, namespace=namespace)
    ran: list[str] = []

    @app.task("job")
    async def job(payload: dict[str, object], ctx: duetime.Context) -> None:
        ran.append(ctx.task_id)

    client = app.sync()
    try:
        async with running(app):
            assert await asyncio.to_thread(client.pause, "job") is True
            assert await asyncio.to_thread(client.paused) == {"job"}
            await asyncio.to_thread(client.schedule, "job", "j1")
            await asyncio.sleep(0.5)
            assert ran == []  # held while paused
            assert await asyncio.to_thread(client.resume, "job") is True
            await eventually(lambda: ran == ["j1"], what="j1 run after the resume")

            assert await asyncio.to_thread(client.add_cron, "hourly", "0 * * * *", task="job")
            assert [c.name for c in await asyncio.to_thread(client.crons)] == ["hourly"]
            tick = await asyncio.to_thread(client.trigger_cron, "hourly")
            assert tick.startswith("hourly@")
            await eventually(lambda: tick in ran, what="the triggered tick run")
            end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
            backfilled = await asyncio.to_thread(
                client.backfill_cron, "hourly", start=end - timedelta(hours=2), end=end
            )
            assert backfilled == 2
            await eventually(lambda: len(ran) == 4, what="the two backfilled ticks run")

            async def recorded() -> bool:
                runs = await asyncio.to_thread(client.history, "job")
                return len(runs) == 4 and {r.outcome for r in runs} == {"done"}

            await eventually(recorded, what="four runs in the history")
            (one,) = await asyncio.to_thread(client.history, "job", "j1")
            assert one.task_id == "j1"
            assert await asyncio.to_thread(client.remove_cron, "hourly") is True
    finally:
        await asyncio.to_thread(client.close)
        await app.close()


async def test_a_result_from_blocking_code(tmp_path: Path, namespace: str) -> None:
    """``SyncClient.result`` waits for a run and returns what its handler returned."""
    app = duetime.App(f"sqlite:///{tmp_path / 'results.db'}", namespace=namespace)

    @app.task("extract")
    async def extract(payload: dict[str, object]) -> dict[str, int]:
        return {"rows": 1200}

    client = app.sync()
    try:
        async with running(app):
            await asyncio.to_thread(client.schedule, "extract", "e1")
            got = await asyncio.to_thread(client.result, "extract", "e1", timedelta(seconds=10))
            assert got == {"rows": 1200}
    finally:
        await asyncio.to_thread(client.close)
        await app.close()
