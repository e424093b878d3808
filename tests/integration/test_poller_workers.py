"""Three worker processes run one poller: its concurrency holds across them, each
instruction runs once, and its scheduler is never called by two processes at once."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.integration.poller_worker import CONCURRENCY
from tests.servers import RedisServer

ROOT = Path(__file__).resolve().parents[2]
ITEMS = 30


def start_poller_worker(
    args: list[str],
    log: Path,
    env: dict[str, str] | None = None,
    module: str = "tests.integration.poller_worker",
) -> subprocess.Popen[bytes]:
    """A worker process of ``module`` with ``args``."""
    env = {**os.environ, **(env or {}), "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    with log.open("wb") as stderr:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [sys.executable, "-m", module, *args],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )


def most_at_once(spans: list[tuple[int, int]]) -> int:
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    most = now = 0
    for _, step in edges:  # an end sorts before a start at the same instant
        now += step
        most = max(most, now)
    return most


@pytest.mark.slow
@pytest.mark.timeout(90)
@pytest.mark.parametrize("store", ["redis", "sqlite"])
def test_three_processes_share_one_poller_within_its_concurrency(
    store: str, redis_server: RedisServer, namespace: str, tmp_path: Path
) -> None:
    url = redis_server.url if store == "redis" else f"sqlite:///{tmp_path / 'duetime.db'}"
    source, ledger = tmp_path / "source.db", tmp_path / "ledger.txt"
    with sqlite3.connect(source) as db:
        db.execute("CREATE TABLE items (id TEXT PRIMARY KEY, taken INTEGER NOT NULL DEFAULT 0)")
        db.executemany(
            "INSERT INTO items (id) VALUES (?)", [(f"item-{n:03}",) for n in range(ITEMS)]
        )
    args = [url, namespace, str(source), str(ledger)]
    workers = [start_poller_worker(args, tmp_path / f"w{n}.log") for n in range(3)]
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            text = ledger.read_text() if ledger.exists() else ""
            if text.count("\nend ") + text.startswith("end ") >= ITEMS:
                break
            time.sleep(0.1)
        time.sleep(0.5)  # anything extra would show
    finally:
        for proc in workers:
            proc.send_signal(signal.SIGTERM)
        for n, proc in enumerate(workers):
            assert proc.wait(20) == 0, (tmp_path / f"w{n}.log").read_text()[-2000:]

    lines = [line.split() for line in ledger.read_text().splitlines()]
    starts = {(f[1], int(f[2])): int(f[3]) for f in lines if f[0] == "start"}
    ends = {(f[1], int(f[2])): int(f[3]) for f in lines if f[0] == "end"}
    runs = Counter(instruction for instruction, _ in starts)
    assert sorted(runs) == [f"item-{n:03}" for n in range(ITEMS)]
    assert max(runs.values()) == 1, f"ran twice: {runs.most_common(3)}"
    spans = [(starts[key], ends[key]) for key in starts]
    assert most_at_once(spans) <= CONCURRENCY
    assert most_at_once(spans) == CONCURRENCY  # the slots were used: by three processes
    assert len({pid for _, pid in starts}) == 3

    calls = [(int(f[2]), int(f[3]), int(f[1])) for f in lines if f[0] == "call"]
    assert len(calls) >= ITEMS // CONCURRENCY
    assert most_at_once([(start, end) for start, end, _ in calls]) == 1
    assert all(
        int(f[4]) > 0 and int(f[4]) + int(f[5]) <= CONCURRENCY for f in lines if f[0] == "call"
    )
