"""Groups across worker processes on one SQLite file: group_concurrency=1 holds a busy group
to one run at a time across three workers, and the small groups are served in turn."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

import duetime
from tests.helpers import eventually
from tests.integration.sqlite.support import ROOT, url_of

pytestmark = pytest.mark.slow

WORKER = """
import asyncio, os, sys, time
from datetime import timedelta
import duetime
from tests.helpers import running

async def main(url, ledger, stop):
    app = duetime.App(url, namespace="ns")
    fd = os.open(ledger, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    @app.task("fair", group_concurrency=1, concurrency=10, lease=timedelta(seconds=30))
    async def fair(payload, ctx):
        os.write(fd, f"start {ctx.task_id} {time.time_ns()}\\n".encode())
        await asyncio.sleep(0.02)
        os.write(fd, f"end {ctx.task_id} {time.time_ns()}\\n".encode())

    async with running(app):
        print("worker started", flush=True)
        while not os.path.exists(stop):
            await asyncio.sleep(0.05)
    await app.close()

asyncio.run(main(*sys.argv[1:4]))
"""


def spans(ledger: Path) -> dict[str, list[int]]:
    """Each task's start and end times (ns), from every worker's lines."""
    times: dict[str, list[int]] = {}
    for line in ledger.read_text().splitlines():
        kind, task_id, t = line.split()
        times.setdefault(task_id, [0, 0])[kind == "end"] = int(t)
    return times


async def test_three_workers_hold_a_busy_group_to_one_and_serve_the_small_ones(
    tmp_path: Path,
) -> None:
    url = url_of(tmp_path / "groups.db")
    ledger, stop = tmp_path / "ledger.log", tmp_path / "stop"
    producer = duetime.App(url, namespace="ns")
    producer.declare("fair")
    await producer.open()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(ROOT / "src"), str(ROOT)))}
    logs = [tmp_path / f"worker-{n}.err" for n in range(3)]
    procs = []
    for log in logs:
        with log.open("wb") as err:
            procs.append(
                await asyncio.create_subprocess_exec(
                    *(sys.executable, "-c", WORKER, url, str(ledger), str(stop)),
                    cwd=ROOT,
                    env=env,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=err,
                )
            )
    try:
        for proc, log in zip(procs, logs, strict=True):
            assert proc.stdout is not None
            line = await asyncio.wait_for(proc.stdout.readline(), 30)
            assert b"worker started" in line, log.read_text()
        tasks = [duetime.Task("fair", f"A{i:03}", group="A") for i in range(100)]
        tasks += [duetime.Task("fair", f"{g}{i}", group=g) for g in "BC" for i in range(3)]
        await producer.schedule_many(tasks)

        def ended() -> int:
            return sum(1 for s, e in spans(ledger).values() if e) if ledger.exists() else 0

        await eventually(lambda: ended() == 106, 60, "every task ran")
    finally:
        stop.touch()
        for proc in procs:
            try:
                await asyncio.wait_for(proc.communicate(), 30)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        await producer.close()
    assert [proc.returncode for proc in procs] == [0, 0, 0], [log.read_text() for log in logs]

    times = spans(ledger)
    a_runs = sorted(v for k, v in times.items() if k[0] == "A")
    # A never ran two at once, whichever worker ran it.
    for (_, end), (start, _) in zip(a_runs, a_runs[1:], strict=False):
        assert start >= end
    # And the next started soon after: the settle of each woke a worker (a lost wake-up
    # shows as a gap of max_idle, 5 s, until some worker looks again on its own).
    gaps = [(start - end) / 1e9 for (_, end), (start, _) in zip(a_runs, a_runs[1:], strict=False)]
    assert max(gaps) < 2.5, max(gaps)
    tenth_a = a_runs[9][0]
    assert all(v[0] < tenth_a for k, v in times.items() if k[0] in "BC")
