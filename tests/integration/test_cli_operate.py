"""The operator's commands from a shell: `duetime workers` lists a running worker process,
`duetime stats` shows the last hour, `duetime dashboard` serves (and refuses to serve to the
network without a token); and the commands on a Redis Cluster and a Sentinel URL."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import duetime
from duetime.cli import main
from tests.faults.harness import Workers
from tests.helpers import eventually, make_dead
from tests.servers import RedisCluster, RedisServer, SentinelGroup, free_port

ROOT = Path(__file__).resolve().parents[2]


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["--log-level", "WARNING", *args])


def only_row(*args: str) -> dict[str, Any]:
    rows = as_json(*args)
    assert isinstance(rows, list) and len(rows) == 1, rows
    row: dict[str, Any] = rows[0]
    return row


def as_json(*args: str) -> object:
    result = invoke(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_workers_lists_a_running_worker_process(
    redis_server: RedisServer, namespace: str, tmp_path: Path
) -> None:
    workers = Workers(tmp_path)
    try:
        proc = workers.start(redis_server.url, namespace).wait_ready()
        deadline = time.monotonic() + 25
        found: object = []
        while time.monotonic() < deadline:
            found = as_json("workers", "--url", redis_server.url, "--namespace", namespace)
            if found:
                break
            time.sleep(0.2)
        assert isinstance(found, list) and len(found) == 1
        (worker,) = found
        assert worker["pid"] == proc.pid and worker["types"] == ["work"]
        assert worker["started_ms"] <= worker["seen_ms"]
        text = invoke("workers", "--url", redis_server.url, "--namespace", namespace).stdout
        assert str(proc.pid) in text and "\twork\t" in text
    finally:
        workers.cleanup()


def test_stats_shows_the_last_hour(redis_server: RedisServer, namespace: str) -> None:
    async def run_some() -> None:
        app = duetime.App(redis_server.url, namespace=namespace)

        @app.task("mail", retries=0)
        async def mail(payload: dict[str, int]) -> None:
            if payload["n"] % 2:
                raise RuntimeError("odd")

        for n in range(6):
            await app.schedule("mail", f"m{n}", payload={"n": n})
        worker = app.worker()
        running = asyncio.create_task(worker.run())

        async def filed() -> bool:
            return (await app.counts("mail"))["dead"] == 3

        await eventually(filed, within=25, what="three dead letters")
        worker.stop()
        await running
        await app.close()

    asyncio.run(run_some())
    row = only_row("stats", "--url", redis_server.url, "--namespace", namespace)
    assert row["dead"] == 3
    recent = row["recent"]
    assert (recent["fired"], recent["succeeded"], recent["failed"]) == (6, 3, 3)
    assert recent["dead_lettered"] == 3 and recent["lateness_p99_ms"] is not None
    text = invoke("stats", "--url", redis_server.url, "--namespace", namespace).stdout
    assert text.splitlines()[0].startswith("type\tdue\trunning\tdead\tfired\tsucceeded")
    assert text.splitlines()[1].startswith("mail\t0\t0\t3\t6\t3\t3\t0\t3\t0\t<=")


@pytest.mark.timeout(60)
def test_dashboard_serves_on_loopback_and_refuses_the_network_without_a_token(
    tmp_path: Path,
) -> None:
    (tmp_path / "d.db").touch()  # an empty file: the dashboard does not create one
    url = f"sqlite:///{tmp_path / 'd.db'}"
    refused = invoke("dashboard", "--url", url, "--host", "0.0.0.0")
    assert refused.exit_code == 2 and "without a token" in refused.output
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "DUETIME_DASHBOARD_TOKEN": "s3cret"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "duetime.cli", "dashboard", "--url", url, "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}/login?token=s3cret" in first
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/") as answer:
                    assert answer.status == 200 and b"Task types" in answer.read()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError("the dashboard did not answer")
    finally:
        proc.terminate()
        proc.communicate(timeout=10)  # reaps it and closes its pipe


async def _dead_letters(url: str, namespace: str) -> None:
    app = duetime.App(url, namespace=namespace)
    app.declare("mail", partitions=3)
    try:
        await make_dead(app, "mail", 5)
    finally:
        await app.close()


@pytest.mark.parametrize("topology", ["cluster", "sentinel"])
def test_the_commands_work_on_a_cluster_and_behind_sentinel(
    topology: str, request: pytest.FixtureRequest, namespace: str
) -> None:
    if topology == "cluster":
        cluster: RedisCluster = request.getfixturevalue("redis_cluster")
        url = cluster.cluster_url
    else:
        group: SentinelGroup = request.getfixturevalue("sentinel_group")
        url = group.sentinel_url
    asyncio.run(_dead_letters(url, namespace))
    target = ("--url", url, "--namespace", namespace)
    row = only_row("stats", *target)
    assert (row["type"], row["dead"]) == ("mail", 5)
    dead = as_json("ls", "mail", "--state", "dead", *target)
    assert isinstance(dead, list) and sorted(t["id"] for t in dead) == [f"d{n}" for n in range(5)]
    assert as_json("retry", "mail", "--all", *target) == {
        "type": "mail",
        "state": "dead",
        "action": "retry",
        "count": 5,
    }
    assert as_json("workers", *target) == []


@pytest.mark.timeout(60)
def test_dashboard_answers_the_allowed_host_names_and_refuses_others(tmp_path: Path) -> None:
    (tmp_path / "d.db").touch()  # an empty file: the dashboard does not create one
    url = f"sqlite:///{tmp_path / 'd.db'}"
    refused = invoke("dashboard", "--url", url, "--allowed-host", "*")
    assert refused.exit_code == 2 and "allowed_hosts" in refused.output
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    command = [sys.executable, "-m", "duetime.cli", "dashboard", "--url", url]
    command += ["--port", str(port), "--allowed-host", "ops.example.com"]
    command += ["--allowed-host", "*.svc.example"]
    proc = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )

    def status(host: str) -> int:
        request = urllib.request.Request(f"http://127.0.0.1:{port}/", headers={"Host": host})
        try:
            with urllib.request.urlopen(request) as answer:
                return int(answer.status)
        except urllib.error.HTTPError as exc:
            return exc.code

    try:
        assert proc.stdout is not None
        assert f"http://127.0.0.1:{port}/" in proc.stdout.readline()
        for _ in range(100):
            try:
                status("localhost")
                break
            except OSError:
                time.sleep(0.1)
        assert status("ops.example.com") == 200
        assert status(f"dash.svc.example:{port}") == 200
        assert status("localhost") == 200
        assert status("rebound.example") == 421
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
