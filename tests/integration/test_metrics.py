"""Prometheus metrics: a worker's endpoint scraped over HTTP as its tasks run, on Redis and
on a SQLite file."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

import duetime
from duetime.metrics import StoreGauges, store_metrics
from duetime.record import Record
from duetime.stores.base import NewTask
from duetime.triggers.cron.expression import parse_cron
from tests.helpers import eventually, running

ROOT = Path(__file__).resolve().parents[2]
FAST = duetime.Backoff(base=timedelta(milliseconds=20), jitter=0)
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture
async def app(redis_or_sqlite_url: str, namespace: str) -> AsyncIterator[duetime.App]:
    app = duetime.App(redis_or_sqlite_url, namespace=namespace)
    yield app
    await app.close()


def parse(text: str) -> Samples:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def fetch(port: int, path: str = "/metrics") -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as reply:
            return reply.status, reply.headers["Content-Type"], reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


async def scrape(worker: duetime.Worker) -> Samples:
    assert worker.metrics is not None
    status, _, body = await asyncio.to_thread(fetch, worker.metrics.port)
    assert status == 200, body
    return parse(body)


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def counts(samples: Samples, task_type: str) -> dict[str, float]:
    kinds = ("fired", "succeeded", "failed", "retried", "dead_lettered")
    return {k: value(samples, f"duetime_tasks_{k}_total", type=task_type) for k in kinds}


async def test_counters_and_histograms_move_as_tasks_run(app: duetime.App) -> None:
    tries: dict[str, int] = {}

    @app.task("ok")
    async def ok(payload: dict[str, Any]) -> None: ...

    @app.task("flaky", retries=3, backoff=FAST)
    async def flaky(payload: dict[str, Any], ctx: duetime.Context) -> None:
        tries[ctx.task_id] = tries.get(ctx.task_id, 0) + 1
        if tries[ctx.task_id] == 1:
            raise ValueError("once")

    @app.task("doomed", retries=1, backoff=FAST)
    async def doomed(payload: dict[str, Any]) -> None:
        raise ValueError("always")

    async with running(app, metrics_port=0) as worker:
        assert worker.metrics is not None and worker.metrics.port > 0
        worker.metrics.store.cache_seconds = 0  # this test reads the store's gauges as they move
        before = await scrape(worker)
        # Every series of the worker's types exists from the start, at zero.
        for name in ("ok", "flaky", "doomed"):
            assert set(counts(before, name).values()) == {0.0}
            assert value(before, "duetime_running_tasks", type=name) == 0
            assert value(before, "duetime_task_lateness_seconds_count", type=name) == 0
        await app.schedule("ok", "o1")
        await app.schedule("ok", "o2")
        await app.schedule("flaky", "f1")
        await app.schedule("doomed", "d1")

        async def settled() -> bool:
            s = await scrape(worker)
            return (
                counts(s, "ok")["succeeded"] == 2
                and counts(s, "flaky")["succeeded"] == 1
                and counts(s, "doomed")["dead_lettered"] == 1
                and value(s, "duetime_store_tasks", type="doomed", state="dead") == 1
            )

        await eventually(settled, within=10, what="every task run to its end")
        after = await scrape(worker)

    assert counts(after, "ok") == {
        "fired": 2,
        "succeeded": 2,
        "failed": 0,
        "retried": 0,
        "dead_lettered": 0,
    }
    assert counts(after, "flaky") == {
        "fired": 2,
        "succeeded": 1,
        "failed": 1,
        "retried": 1,
        "dead_lettered": 0,
    }
    assert counts(after, "doomed") == {
        "fired": 2,
        "succeeded": 0,
        "failed": 2,
        "retried": 1,
        "dead_lettered": 1,
    }
    for name, fired in (("ok", 2), ("flaky", 2), ("doomed", 2)):
        assert value(after, "duetime_task_lateness_seconds_count", type=name) == fired
        assert value(after, "duetime_task_duration_seconds_count", type=name) == fired
        # Lateness buckets run from 1 ms to 60 s (then +Inf), in seconds.
        top = value(after, "duetime_task_lateness_seconds_bucket", type=name, le="60.0")
        assert top == fired
        assert ("duetime_task_lateness_seconds_bucket", (("le", "0.001"), ("type", name))) in after
        assert value(after, "duetime_running_tasks", type=name) == 0
    for state, n in (("due", 0), ("running", 0), ("dead", 1)):
        assert value(after, "duetime_store_tasks", type="doomed", state=state) == n
    assert value(after, "duetime_store_tasks", type="ok", state="due") == 0
    assert value(after, "duetime_store_up") == 1


async def test_the_running_gauge_counts_handlers_that_have_not_ended(app: duetime.App) -> None:
    release = asyncio.Event()
    entered = asyncio.Event()

    @app.task("blocker", concurrency=4)
    async def blocker(payload: dict[str, Any]) -> None:
        entered.set()
        await release.wait()

    async with running(app, metrics_port=0) as worker:
        for n in range(3):
            await app.schedule("blocker", f"b{n}")

        async def three_running() -> bool:
            return value(await scrape(worker), "duetime_running_tasks", type="blocker") == 3

        await eventually(three_running, what="three handlers running")
        release.set()

        async def none_running() -> bool:
            return value(await scrape(worker), "duetime_running_tasks", type="blocker") == 0

        await eventually(none_running, what="no handler running")
        assert counts(await scrape(worker), "blocker")["succeeded"] == 3


async def test_store_gauges_are_read_on_scrape_and_cached(app: duetime.App) -> None:
    @app.task("later")
    async def later(payload: dict[str, Any]) -> None: ...

    await app.schedule_many(
        [duetime.Task("later", f"l{n}", delay=timedelta(hours=1)) for n in range(3)]
    )
    async with running(app, metrics_port=0) as worker:
        assert worker.metrics is not None
        gauges = worker.metrics.store
        assert gauges.cache_seconds == 5.0 and gauges.reads == 0  # nothing read before a scrape
        first = await scrape(worker)
        assert value(first, "duetime_store_tasks", type="later", state="due") == 3
        await app.schedule("later", "l3", delay=timedelta(hours=1))
        # Within the cache time, scrapes (ten at once too) are served without a reading.
        second = await scrape(worker)
        await asyncio.gather(*(scrape(worker) for _ in range(10)))
        assert value(second, "duetime_store_tasks", type="later", state="due") == 3
        assert gauges.reads == 1
        gauges.cache_seconds = 0.2
        await asyncio.sleep(0.25)
        third = await scrape(worker)
        assert value(third, "duetime_store_tasks", type="later", state="due") == 4
        assert gauges.reads == 2


async def test_missed_cron_ticks_are_counted(app: duetime.App) -> None:
    @app.task("yearly")
    async def yearly(payload: dict[str, Any], ctx: duetime.Context) -> None: ...

    await app.add_cron("newYear", "0 0 1 1 *", task="yearly", missed="skip")
    now = await app.now_ms()
    ticks = parse_cron("0 0 1 1 *").ticks_until(now - 3 * 366 * 86_400_000, now, 10)[-3:]
    store = await app.open()
    _, stored = await app.named_triggers.locate("newYear")
    assert stored is not None and stored.record is not None
    rewound = dataclasses.replace(Record.decode(stored.record), occurrence_ms=ticks[0])
    await store.schedule("yearly", [NewTask("newYear", ticks[0], rewound.encode())])

    async with running(app, metrics_port=0) as worker:

        async def missed() -> bool:
            return value(await scrape(worker), "duetime_missed_ticks_total", type="yearly") > 0

        await eventually(missed, what="missed ticks counted")
        assert value(await scrape(worker), "duetime_missed_ticks_total", type="yearly") == 3


async def test_the_endpoint_answers_other_paths_and_methods_plainly(app: duetime.App) -> None:
    @app.task("ok")
    async def ok(payload: dict[str, Any]) -> None: ...

    async with running(app, metrics_port=0) as worker:
        assert worker.metrics is not None
        port = worker.metrics.port
        status, content_type, body = await asyncio.to_thread(fetch, port)
        assert status == 200 and content_type.startswith("text/plain; version=0.0.4")
        assert "# TYPE duetime_tasks_fired_total counter" in body
        status, _, _ = await asyncio.to_thread(fetch, port, "/nothing")
        assert status == 404
        # OpenMetrics when the scraper asks for it, as Prometheus does.
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/metrics",
            headers={"Accept": "application/openmetrics-text; version=1.0.0"},
        )
        reply = await asyncio.to_thread(urllib.request.urlopen, request, timeout=10)
        assert reply.headers["Content-Type"].startswith("application/openmetrics-text")
        assert reply.read().decode().endswith("# EOF\n")
        # A client that sends garbage, or nothing, does not stop the endpoint.
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"garbage\r\n\r\n")
        writer.close()
        assert (await scrape(worker))[("duetime_store_up", ())] == 1
    # Once the worker stops, so does its endpoint.
    with pytest.raises(OSError):
        await asyncio.to_thread(fetch, port)


async def test_two_workers_in_one_process_keep_their_own_metrics(
    app: duetime.App, tmp_path: Path
) -> None:
    other = duetime.App(f"sqlite:///{tmp_path / 'other.db'}")

    @app.task("ok")
    async def ok(payload: dict[str, Any]) -> None: ...

    @other.task("ok")
    async def ok_too(payload: dict[str, Any]) -> None: ...

    try:
        async with running(app, metrics_port=0) as one, running(other, metrics_port=0) as two:
            await app.schedule("ok", "only-here")

            async def ran() -> bool:
                return counts(await scrape(one), "ok")["succeeded"] == 1

            await eventually(ran, what="the task run")
            assert counts(await scrape(two), "ok")["succeeded"] == 0
    finally:
        await other.close()


async def test_a_port_in_use_is_a_clear_error(app: duetime.App) -> None:
    @app.task("ok")
    async def ok(payload: dict[str, Any]) -> None: ...

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        worker = app.worker(metrics_port=port)
        with pytest.raises(duetime.ConfigError, match=f"127.0.0.1:{port}: the port is in use"):
            await asyncio.wait_for(worker.run(), 10)


async def test_bad_metrics_settings_are_refused(app: duetime.App) -> None:
    @app.task("ok")
    async def ok(payload: dict[str, Any]) -> None: ...

    with pytest.raises(duetime.ValidationError, match="metrics_port"):
        app.worker(metrics_port=70_000)
    with pytest.raises(duetime.ValidationError, match="metrics_host"):
        app.worker(metrics_port=0, metrics_host="")


async def test_store_metrics_for_an_endpoint_of_ones_own(app: duetime.App) -> None:
    app.declare("mail")
    await app.schedule("mail", "m1", delay=timedelta(hours=1))
    body, content_type = await store_metrics(app)
    assert content_type.startswith("text/plain")
    samples = parse(body.decode())
    assert value(samples, "duetime_store_tasks", type="mail", state="due") == 1
    assert value(samples, "duetime_store_up") == 1
    assert not any(name.startswith("duetime_tasks_") for name, _ in samples)
    # A kept StoreGauges caches its readings across calls.
    gauges = StoreGauges(app, ["mail"], cache_seconds=60)
    await gauges.render()
    await app.schedule("mail", "m2", delay=timedelta(hours=1))
    body, _ = await gauges.render()
    assert value(parse(body.decode()), "duetime_store_tasks", type="mail", state="due") == 1
    assert gauges.reads == 1


async def test_a_store_that_cannot_be_read_shows_as_down(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = duetime.App(f"redis://127.0.0.1:{port}/0")
    app.declare("mail")
    try:
        started = time.monotonic()
        body, _ = await store_metrics(app)
        assert time.monotonic() - started < 10
        samples = parse(body.decode())
        assert value(samples, "duetime_store_up") == 0
        assert not any(name == "duetime_store_tasks" for name, _ in samples)
    finally:
        await app.close()


def test_without_prometheus_client_duetime_imports_and_a_metrics_port_says_what_to_install(
    tmp_path: Path,
) -> None:
    script = (
        "import sys; sys.modules['prometheus_client'] = None\n"
        "import duetime\n"
        f"app = duetime.App('sqlite:///{tmp_path / 'x.db'}')\n"
        "app.task('ok')(lambda payload: None)\n"
        "app.worker()\n"
        "try:\n"
        "    app.worker(metrics_port=9100)\n"
        "except duetime.ConfigError as exc:\n"
        "    print(exc)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    assert "pip install 'duetime[metrics]'" in out.stdout, out.stderr


APP_MODULE = """
import os, duetime
app = duetime.App(os.environ["METRICS_TEST_URL"], namespace=os.environ["METRICS_TEST_NS"])

@app.task("mail")
async def mail(payload):
    pass
"""


def test_the_worker_command_serves_metrics(tmp_path: Path, redis_url: str, namespace: str) -> None:
    (tmp_path / "metricsapp.py").write_text(APP_MODULE)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "METRICS_TEST_URL": redis_url,
        "METRICS_TEST_NS": namespace,
    }
    command = [sys.executable, "-m", "duetime.cli", "worker", "metricsapp:app"]
    proc = subprocess.Popen(
        [*command, "--metrics", str(port)],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        app = duetime.App(redis_url, namespace=namespace)
        app.declare("mail")
        with app.sync() as client:
            client.schedule("mail", "m1")
        deadline = time.monotonic() + 15
        seen: Samples = {}
        while time.monotonic() < deadline:
            try:
                status, _, body = fetch(port)
            except OSError:  # not listening yet
                time.sleep(0.1)
                continue
            seen = parse(body)
            if value(seen, "duetime_tasks_succeeded_total", type="mail") == 1:
                break
            time.sleep(0.1)
        assert value(seen, "duetime_tasks_succeeded_total", type="mail") == 1
        # A second worker asking for the same port stops with a clear error.
        second = subprocess.run(
            [*command, "--metrics", str(port)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert second.returncode == 1
        assert f"cannot serve metrics on 127.0.0.1:{port}: the port is in use" in second.stderr
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=15)
    assert proc.returncode == 0, stderr
    assert f"metrics served at http://127.0.0.1:{port}/metrics" in stderr


async def test_an_aborted_run_counts_as_aborted_not_failed(app: duetime.App) -> None:
    started = asyncio.Event()

    @app.task("slow", retries=3)
    async def slow(payload: dict[str, Any]) -> None:
        started.set()
        await asyncio.sleep(60)

    @app.task("flaky", retries=0)
    async def flaky(payload: dict[str, Any]) -> None:
        raise RuntimeError("down")

    async with running(app, metrics_port=0) as worker:
        await app.schedule("slow", "s1")
        await asyncio.wait_for(started.wait(), 10)
        assert await app.abort("slow", "s1") == "aborted"
        await app.schedule("flaky", "f1")

        async def counted() -> bool:
            samples = await scrape(worker)
            return (
                value(samples, "duetime_tasks_aborted_total", type="slow") == 1
                and value(samples, "duetime_tasks_failed_total", type="flaky") == 1
            )

        await eventually(counted, what="the abort and the failure counted")
        samples = await scrape(worker)
    assert value(samples, "duetime_tasks_failed_total", type="slow") == 0
    assert value(samples, "duetime_running_tasks", type="slow") == 0
    assert value(samples, "duetime_tasks_aborted_total", type="flaky") == 0
