"""``immediately`` across processes: two workers starting together on a new schedule run it
once, and a worker restarted later does not run it again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.servers import RedisServer

ROOT = Path(__file__).resolve().parents[2]


def _start(url: str, namespace: str, ledger: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    with log.open("wb") as stderr:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.integration.immediate_worker",
                url,
                namespace,
                str(ledger),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )


def _wait_started(logs: list[Path], within: float = 20) -> None:
    """Until every worker says it started: it wrote its schedules before that."""
    deadline = time.monotonic() + within
    while not all("worker started" in log.read_text() for log in logs):
        assert time.monotonic() < deadline, [log.read_text()[-1000:] for log in logs]
        time.sleep(0.05)


def _stop(workers: list[subprocess.Popen[bytes]], log: Path) -> None:
    for proc in workers:
        proc.send_signal(signal.SIGTERM)
    for proc in workers:
        assert proc.wait(20) == 0, log.read_text()[-2000:]


@pytest.mark.slow
@pytest.mark.timeout(90)
@pytest.mark.parametrize("store", ["redis", "sqlite"])
def test_two_workers_and_a_restart_run_an_immediate_schedule_once(
    store: str, redis_server: RedisServer, namespace: str, tmp_path: Path
) -> None:
    url = redis_server.url if store == "redis" else f"sqlite:///{tmp_path / 'cron.db'}"
    ledger = tmp_path / "ledger.txt"
    logs = [tmp_path / f"w{n}.log" for n in range(3)]
    workers = [_start(url, namespace, ledger, log) for log in logs[:2]]
    try:
        _wait_started(logs[:2])
        deadline = time.monotonic() + 10
        while not (ledger.exists() and ledger.read_text()):
            assert time.monotonic() < deadline, "the immediate run did not come"
            time.sleep(0.05)
        time.sleep(1)  # time enough for a second run, were there one
    finally:
        _stop(workers, logs[0])

    restarted = _start(url, namespace, ledger, logs[2])
    try:
        _wait_started(logs[2:])
        time.sleep(1)
    finally:
        _stop([restarted], logs[2])

    runs = ledger.read_text().splitlines()
    assert len(runs) == 1, runs
    occurrence, _, attempt = runs[0].split()
    assert occurrence.startswith("kickoff@") and attempt == "1"
