"""Abort across processes, on each store: a handler running in one of two worker processes
is cancelled within a second of ``abort`` in this process, cleans up, and is not run again
by either worker; a plain def handler is said to be not interruptible and its run ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import duetime
from tests.helpers import eventually

ROOT = Path(__file__).resolve().parents[2]


def _start(url: str, namespace: str, ledger: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    with log.open("wb") as stderr:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [sys.executable, "-m", "tests.contract.abort_worker", url, namespace, str(ledger)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )


def _lines(ledger: Path, what: str, task_id: str) -> list[list[str]]:
    text = ledger.read_text() if ledger.exists() else ""
    return [w for w in (line.split() for line in text.splitlines()) if w[:2] == [what, task_id]]


def _wall_ms() -> float:
    return time.clock_gettime_ns(time.CLOCK_REALTIME) / 1e6


@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_abort_reaches_the_worker_process_that_runs_the_handler_within_a_second(
    store_url: str, namespace: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.txt"
    workers = [_start(store_url, namespace, ledger, tmp_path / f"w{n}.log") for n in range(2)]
    app = duetime.App(store_url, namespace=namespace)
    app.declare("slow")

    @app.task("blocking")
    def blocking(payload: dict[str, Any]) -> None:  # the worker's: a plain def
        raise AssertionError("runs in the worker processes only")

    try:
        await app.schedule("slow", "s1")
        await eventually(lambda: bool(_lines(ledger, "start", "s1")), 30, "the handler starts")
        asked = _wall_ms()
        assert await app.abort("slow", "s1") == "aborted"
        await eventually(lambda: bool(_lines(ledger, "cleanup", "s1")), 5, "its cleanup")
        (start,) = _lines(ledger, "start", "s1")
        (cleanup,) = _lines(ledger, "cleanup", "s1")
        assert cleanup[2] == start[2]  # in the process that ran it
        assert float(cleanup[3]) - asked < 1000, "cancelled within a second"

        async def gone(task_id: str) -> bool:
            return await app.get("slow" if task_id == "s1" else "blocking", task_id) is None

        await eventually(lambda: gone("s1"), 5, "the aborted task ends")

        # A plain def handler: not interruptible; its run ends as aborted when it returns.
        await app.schedule("blocking", "b1", payload={"seconds": 1.5})
        await eventually(lambda: bool(_lines(ledger, "start", "b1")), 10, "the sync handler")
        assert await app.abort("blocking", "b1") == "not_interruptible"
        await eventually(lambda: bool(_lines(ledger, "end", "b1")), 5, "its thread ends")
        await eventually(lambda: gone("b1"), 5, "the aborted task ends")

        # Both gone from the store, settled: no task is left for a wrong retry or a re-run
        # by the other worker to claim.
        assert len(_lines(ledger, "start", "s1")) == 1
        assert len(_lines(ledger, "start", "b1")) == 1
        for task_type in ("slow", "blocking"):
            assert await app.counts(task_type) == {"due": 0, "running": 0, "dead": 0}
    finally:
        await app.close()
        for proc in workers:
            proc.send_signal(signal.SIGTERM)
        for n, proc in enumerate(workers):
            assert proc.wait(20) == 0, (tmp_path / f"w{n}.log").read_text()[-2000:]
