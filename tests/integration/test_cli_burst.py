"""``duetime worker APP --burst`` (and ``app.run(burst=True)``): a real worker process runs
what is due now, retries due at once included, then exits: 0, or 1 when a task ended in the
dead letters meanwhile. What comes due later waits."""

from __future__ import annotations

import asyncio
import importlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

import duetime
from tests.servers import RedisServer

APP_MODULE = """
import os, duetime
app = duetime.App(os.environ["BURST_URL"])

@app.task("mail", retries=1)
def mail(payload, ctx):
    with open(os.environ["BURST_LEDGER"], "a") as f:
        f.write(f"{ctx.task_id} {ctx.attempt}\\n")
    if payload.get("busy") and ctx.attempt == 1:
        raise duetime.Retry(after=0, reason="busy")
    if payload.get("fail"):
        raise duetime.Abort("refused")
"""


@pytest.fixture
def burst_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[duetime.App]:
    """The app module in the working directory, and an App of the test's own on its store."""
    url = f"sqlite:///{tmp_path / 'burst.db'}"
    (tmp_path / "burstapp.py").write_text(APP_MODULE)
    monkeypatch.setenv("BURST_URL", url)
    monkeypatch.setenv("BURST_LEDGER", str(tmp_path / "ledger.txt"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    producer = duetime.App(url)
    producer.declare("mail")
    yield producer
    sys.modules.pop("burstapp", None)


def burst(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    began = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "duetime.cli", "worker", "burstapp:app", "--burst", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    return proc, time.monotonic() - began


def ledger() -> list[str]:
    path = Path("ledger.txt")
    return sorted(path.read_text().splitlines()) if path.exists() else []


def test_a_burst_runs_what_is_due_and_exits_0(burst_app: duetime.App) -> None:
    client = burst_app.sync()
    try:
        client.schedule("mail", "a")
        client.schedule("mail", "b", payload={"busy": True})  # retried at once, in the burst
        client.schedule("mail", "later", delay=timedelta(hours=1))
        client.schedule("mail", "hourly", every=timedelta(hours=1))
        proc, took = burst()
        assert proc.returncode == 0, proc.stderr
        assert ledger() == ["a 1", "b 1", "b 2", "hourly 1"]
        assert sorted(t.task_id for t in client.list("mail")) == ["hourly", "later"]
        assert client.counts("mail") == {"due": 2, "running": 0, "dead": 0}
        assert took < 20, f"the burst took {took:.1f} s"
        # Nothing due: it starts, finds nothing and stops.
        proc, _ = burst()
        assert proc.returncode == 0, proc.stderr
        assert len(ledger()) == 4
    finally:
        client.close()


def test_a_task_that_ends_dead_makes_the_burst_exit_1(burst_app: duetime.App) -> None:
    client = burst_app.sync()
    try:
        client.schedule("mail", "ok")
        client.schedule("mail", "bad", payload={"fail": True})
        proc, _ = burst()
        assert proc.returncode == 1, proc.stderr
        assert "1 task(s) ended in the dead letters" in proc.stderr
        assert ledger() == ["bad 1", "ok 1"]
        [dead] = client.list("mail", "dead")
        assert (dead.task_id, dead.error) == ("bad", "refused")
        # The next burst has no dead letter of its own: 0 again.
        client.schedule("mail", "fine")
        proc, _ = burst()
        assert proc.returncode == 0, proc.stderr
    finally:
        client.close()


def test_app_run_in_a_burst_returns_the_worker_with_its_dead_letters(
    burst_app: duetime.App,
) -> None:
    app = importlib.import_module("burstapp").app

    async def schedule() -> None:
        await burst_app.schedule("mail", "x", payload={"fail": True})
        await burst_app.schedule("mail", "y")
        await burst_app.close()

    asyncio.run(schedule())
    worker = app.run(burst=True, gc_tuning=False)
    assert worker.dead_lettered == 1
    assert ledger() == ["x 1", "y 1"]


@pytest.mark.slow  # about 10 s: each try waits for the Redis client's own retries
async def test_a_burst_whose_store_goes_away_ends_with_its_error() -> None:
    with RedisServer() as server:
        app = duetime.App(server.url)

        @app.task("mail")
        async def mail(payload: dict[str, object]) -> None:
            server.kill()  # SIGKILL: the store is gone before this outcome is settled

        await app.schedule("mail", "m")
        began = time.monotonic()
        with pytest.raises(duetime.StoreError):
            await app.worker(burst=True, monitored=False).run()
        assert time.monotonic() - began < 20  # no final flush against a store that is gone
        await app.close()
