"""Three worker processes, one schedule every second: each tick runs exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.servers import RedisServer

ROOT = Path(__file__).resolve().parents[2]


#: Ticks in a row the workers run before they are stopped.
WINDOW = 15


def _covered(ledger: Path) -> bool:
    lines = ledger.read_text().splitlines()
    ticks = sorted(int(f[0].split("@")[1]) for f in map(str.split, lines) if len(f) == 3)
    return bool(ticks) and ticks[-1] >= ticks[0] + WINDOW * 1000


def _start(url: str, namespace: str, ledger: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    with log.open("wb") as stderr:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [sys.executable, "-m", "tests.integration.cron_worker", url, namespace, str(ledger)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )


@pytest.mark.slow
@pytest.mark.timeout(90)
@pytest.mark.parametrize("store", ["redis", "sqlite"])
def test_three_workers_run_each_tick_of_an_every_second_schedule_exactly_once(
    store: str, redis_server: RedisServer, namespace: str, tmp_path: Path
) -> None:
    url = redis_server.url if store == "redis" else f"sqlite:///{tmp_path / 'cron.db'}"
    ledger = tmp_path / "ledger.txt"
    ledger.touch()
    workers = [_start(url, namespace, ledger, tmp_path / f"w{n}.log") for n in range(3)]
    try:
        # Until the ledger holds the tick WINDOW seconds after its first (one deadline).
        deadline = time.monotonic() + 60
        while not _covered(ledger):
            assert time.monotonic() < deadline, ledger.read_text()[-2000:]
            assert all(p.poll() is None for p in workers), (tmp_path / "w0.log").read_text()
            time.sleep(0.2)
    finally:
        for proc in workers:
            proc.send_signal(signal.SIGTERM)
        for proc in workers:
            assert proc.wait(20) == 0, (tmp_path / "w0.log").read_text()[-2000:]

    runs = [line.split() for line in ledger.read_text().splitlines()]
    ticks = Counter(int(occurrence.split("@")[1]) for occurrence, _, _ in runs)
    assert ticks and max(ticks.values()) == 1, f"a tick ran twice: {ticks.most_common(3)}"
    ordered = sorted(ticks)
    first = ordered[0]
    window = [t for t in ordered if first <= t < first + WINDOW * 1000]
    assert window == [first + 1000 * n for n in range(WINDOW)]  # none missing
    assert len({pid for _, pid, _ in runs}) >= 2  # the workers really shared the ticks
