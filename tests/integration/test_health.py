"""A worker's health checks over HTTP: /healthz follows its store (a redis-server stopped and
started again) and its event loop, /readyz its start and stop; alone or on the metrics
port; and from ``duetime worker --health-port``."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

import duetime
from duetime.clock import Clock
from duetime.probes.health import WorkerHealth
from duetime.stores.base import Store
from tests.helpers import eventually, running
from tests.servers import RedisServer

ROOT = Path(__file__).resolve().parents[2]
#: Short, so that an outage shows within a second.
INTERVAL = 0.5


def get(port: int, path: str, timeout: float = 5) -> tuple[int, str]:
    """The status and body of a GET on this machine's ``port``."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


async def aget(port: int, path: str, wait: float = 5) -> tuple[int, str]:
    return await asyncio.to_thread(get, port, path, wait)


def health_of(worker: duetime.Worker) -> WorkerHealth:
    health = worker.find_listener(WorkerHealth)
    assert health is not None
    return health


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    """A redis-server of this test's own, to stop and start."""
    with RedisServer() as server:
        yield server


@pytest.fixture
async def app(own_redis: RedisServer, namespace: str) -> AsyncIterator[duetime.App]:
    app = duetime.App(own_redis.url, namespace=namespace)

    @app.task("mail")
    async def mail(payload: dict[str, Any]) -> None: ...

    yield app
    await app.close()


async def test_healthz_fails_while_the_store_is_down_and_recovers_with_it(
    app: duetime.App, own_redis: RedisServer
) -> None:
    async with running(app, health_port=0, health_interval=INTERVAL) as worker:
        port = health_of(worker).port
        status, body = await aget(port, "/healthz")
        assert status == 200 and body.startswith("ok: store answered"), body
        assert await aget(port, "/readyz") == (200, "ready\n")

        down = time.monotonic()
        own_redis.stop()

        async def failing() -> bool:
            return (await aget(port, "/healthz"))[0] == 503

        await eventually(failing, within=10, what="/healthz 503 with the store down")
        # Not before the interval has passed without an answer (the last answer came at
        # most a quarter of the interval before the stop).
        assert time.monotonic() - down >= 0.75 * INTERVAL
        status, body = await aget(port, "/healthz")
        assert status == 503 and body.startswith("store unreachable for "), body
        # Readiness is about the worker's life: it still runs (and will reconnect).
        assert (await aget(port, "/readyz"))[0] == 200

        await asyncio.to_thread(own_redis.start)

        async def healthy() -> bool:
            return (await aget(port, "/healthz"))[0] == 200

        await eventually(healthy, within=10, what="/healthz 200 with the store back")
        # And the worker still works.
        await app.schedule("mail", "after-the-outage")

        async def ran() -> bool:
            return await app.get("mail", "after-the-outage") is None

        await eventually(ran, within=10, what="a task run after the outage")


async def test_a_blocked_event_loop_answers_no_health_check(app: duetime.App) -> None:
    entered = threading.Event()

    @app.task("hog")
    async def hog(payload: dict[str, Any]) -> None:
        entered.set()
        time.sleep(2)  # noqa: ASYNC251 - the defect under test: a handler blocking the loop

    def probe_while_blocked(port: int) -> bool:
        # From a thread, once the handler blocks the loop: the probe must go unanswered.
        # (Probing from the test's own loop would race the block: the loop is the same.)
        assert entered.wait(10), "the hog never started"
        try:
            get(port, "/healthz", timeout=0.5)
        except OSError:  # no answer in time: the probe fails, as a kubelet's would
            return True
        return False

    async with running(app, health_port=0, health_interval=INTERVAL) as worker:
        port = health_of(worker).port
        assert (await aget(port, "/healthz"))[0] == 200
        probe = asyncio.create_task(asyncio.to_thread(probe_while_blocked, port))
        await asyncio.sleep(0)  # the probe's thread is waiting before the hog can start
        await app.schedule("hog", "h1")
        assert await asyncio.wait_for(probe, 15), "a health check answered while blocked"
        await eventually(lambda: worker.running["hog"] == 0, within=10, what="the hog done")

        async def healthy() -> bool:  # the store's probe, late while blocked, answers again
            return (await aget(port, "/healthz"))[0] == 200

        await eventually(healthy, within=5, what="healthy again once the loop is free")


async def test_readyz_fails_while_stopping_and_healthz_holds_until_the_end(
    app: duetime.App,
) -> None:
    entered, release = asyncio.Event(), asyncio.Event()

    @app.task("slow")
    async def slow(payload: dict[str, Any]) -> None:
        entered.set()
        await release.wait()

    worker = app.worker(health_port=0, health_interval=INTERVAL, grace=30)
    run = asyncio.create_task(worker.run())
    try:
        await asyncio.wait_for(worker.started.wait(), 10)
        port = health_of(worker).port
        await app.schedule("slow", "s1")
        await asyncio.wait_for(entered.wait(), 10)
        worker.stop()
        # Stopping gracefully: not ready, but alive (a liveness failure now would cut the
        # handler short).
        assert await aget(port, "/readyz") == (503, "stopping\n")
        status, body = await aget(port, "/healthz")
        assert status == 200 and body.startswith("ok: stopping, 1 handlers finishing"), body
        release.set()
        await asyncio.wait_for(run, 30)
    finally:
        release.set()
        worker.stop(now=True)
        await asyncio.wait_for(run, 30)
    # Once the worker stopped, nothing listens.
    with pytest.raises(OSError):
        await aget(port, "/healthz")


class HeldStart(duetime.Listener):
    """A listener whose start waits until released: the worker is starting meanwhile."""

    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def start(self, store: Store, clock: Clock) -> None:
        await self.release.wait()


async def test_readyz_fails_until_the_worker_claims(app: duetime.App) -> None:
    worker = app.worker(health_port=0, health_interval=INTERVAL)
    held = worker.add_listener(HeldStart())
    run = asyncio.create_task(worker.run())
    try:
        health = health_of(worker)
        await eventually(lambda: health.port != 0, what="the health endpoint listening")
        assert await aget(health.port, "/readyz") == (503, "starting\n")
        assert (await aget(health.port, "/healthz"))[0] == 200
        held.release.set()
        await asyncio.wait_for(worker.started.wait(), 10)

        async def ready() -> bool:
            return (await aget(health.port, "/readyz"))[0] == 200

        await eventually(ready, what="/readyz 200 once claiming")
    finally:
        held.release.set()
        worker.stop()
        await asyncio.wait_for(run, 30)


async def test_health_shares_the_metrics_port(app: duetime.App) -> None:
    async with running(app, metrics_port=0, health_port=0) as worker:
        assert worker.metrics is not None
        port = worker.metrics.port
        assert health_of(worker).port == port
        status, body = await aget(port, "/metrics")
        assert status == 200 and "duetime_tasks_fired_total" in body
        assert (await aget(port, "/healthz"))[0] == 200
        assert (await aget(port, "/readyz"))[0] == 200
        assert await aget(port, "/nothing") == (404, "see /metrics, /healthz, /readyz\n")


async def test_health_on_a_port_of_its_own_beside_metrics(app: duetime.App) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        health_port = probe.getsockname()[1]
    async with running(app, metrics_port=0, health_port=health_port) as worker:
        assert worker.metrics is not None and worker.metrics.port != health_port
        assert (await aget(health_port, "/healthz"))[0] == 200
        assert (await aget(health_port, "/metrics"))[0] == 404
        assert (await aget(worker.metrics.port, "/healthz"))[0] == 404


def test_bad_health_settings_are_refused(app: duetime.App) -> None:
    with pytest.raises(duetime.ValidationError, match="health_port"):
        app.worker(health_port=70_000)
    with pytest.raises(duetime.ValidationError, match="health_host"):
        app.worker(health_port=0, health_host="")
    with pytest.raises(duetime.ValidationError, match="health_interval"):
        app.worker(health_port=0, health_interval=0)
    with pytest.raises(duetime.ValidationError, match="health_host"):
        app.worker(metrics_port=9100, health_port=9100, health_host="0.0.0.0")


APP_MODULE = """
import os, duetime
app = duetime.App(os.environ["HEALTH_TEST_URL"], namespace=os.environ["HEALTH_TEST_NS"])

@app.task("mail")
async def mail(payload):
    pass
"""


def test_the_worker_command_answers_health_checks_through_a_redis_restart(
    tmp_path: Path, own_redis: RedisServer, namespace: str
) -> None:
    (tmp_path / "healthapp.py").write_text(APP_MODULE)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "HEALTH_TEST_URL": own_redis.url,
        "HEALTH_TEST_NS": namespace,
    }
    command = [sys.executable, "-m", "duetime.cli", "worker", "healthapp:app"]
    options = ["--health-port", str(port), "--health-interval", "1", "--grace", "5"]
    proc = subprocess.Popen(
        [*command, *options], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True
    )

    def wait_for(status: int, path: str = "/healthz", within: float = 15) -> str:
        deadline = time.monotonic() + within
        last: tuple[int, str] | str = "nothing"
        while time.monotonic() < deadline:
            try:
                last = get(port, path)
            except OSError as exc:  # not listening yet
                last = repr(exc)
            if isinstance(last, tuple) and last[0] == status:
                return last[1]
            time.sleep(0.1)
        raise AssertionError(f"{path} never answered {status}: last {last!r}")

    try:
        assert wait_for(200, "/readyz") == "ready\n"
        assert wait_for(200).startswith("ok: store answered")
        own_redis.stop()
        assert wait_for(503).startswith("store unreachable for ")
        own_redis.start()
        assert wait_for(200).startswith("ok: store answered")
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr
    assert f"health served at http://127.0.0.1:{port}/healthz and /readyz" in stderr
    assert "health: /healthz answers 503: store unreachable for" in stderr
    assert "health: the store answers again; /healthz answers 200" in stderr
