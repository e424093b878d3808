"""Wrong clocks: workers whose wall clock is an hour fast or an hour slow run tasks neither
early nor late, because every worker reads one clock, the store's."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime

import pytest
import redis

import duetime
from tests.faults.harness import Workers, by_task, redis_time_ms, wall_ms
from tests.helpers import eventually

SKEW_S = 3600.0
#: A handler may start this much before its due time (by Redis TIME): none, but for the
#: rounding of a due time to the millisecond.
EARLY_MS = 1.0
#: And at most this much after, plus what the machine itself adds (see the control).
LATE_MS = 50.0


async def _wake_at(dues_ms: list[int]) -> list[float]:
    """Sleep until each due time in turn; how late each wake-up was, in ms."""
    lateness = []
    for due in dues_ms:
        ahead = (due - wall_ms()) / 1000
        if ahead > 0:
            await asyncio.sleep(ahead)
        lateness.append(wall_ms() - due)
    return lateness


@pytest.mark.slow
async def test_workers_with_wrong_clocks_run_tasks_on_time(
    redis_url: str, namespace: str, workers: Workers
) -> None:
    n = 8
    skews = {"fast": SKEW_S, "slow": -SKEW_S}
    client = redis.Redis.from_url(redis_url)
    apps = {}
    try:
        procs = {}
        for name, skew in skews.items():
            # One namespace per worker, so each one's tasks are surely its own.
            procs[name] = workers.start(
                redis_url, f"{namespace}{name}", lease=5.0, concurrency=n, clock_offset=skew
            )
        for name, proc in procs.items():
            proc.wait_ready()
            # The skew is in effect in that process.
            found = re.search(r"time\.time\(\) ([\d.]+) wall ([\d.]+)", proc.log())
            assert found is not None, proc.log()
            shown, real = float(found[1]), float(found[2])
            assert abs(shown - real - skews[name]) < 5, (name, shown, real)

        dues: dict[str, dict[str, int]] = {}
        for name in skews:
            app = apps[name] = duetime.App(redis_url, namespace=f"{namespace}{name}")
            app.declare("work")
            now = redis_time_ms(client)
            # Due in 1 to 2 s by the store's clock, spread out.
            dues[name] = {f"{name}{i}": int(now) + 1000 + i * 1000 // n for i in range(n)}
            for task_id, due_ms in dues[name].items():
                at = datetime.fromtimestamp(due_ms / 1000, UTC)
                await app.schedule("work", task_id, at=at)

        # A control: this process sleeps until the same due times and notes how late it
        # wakes. On a quiet machine that is about a millisecond; on a loaded one it says
        # how much lateness the machine, not duetime, adds.
        control = asyncio.create_task(
            _wake_at(sorted(d for m in dues.values() for d in m.values()))
        )
        everything = {task_id for d in dues.values() for task_id in d}
        await eventually(
            lambda: set(by_task(workers.ledger(), "effect")) == everything, 10, "all ran"
        )
        noise_ms = max(await control)
        starts = by_task(workers.ledger(), "start")
        report = {}
        for name, proc in procs.items():
            for task_id, due_ms in dues[name].items():
                (run,) = starts[task_id]
                assert run.pid == proc.pid
                assert run.due_ms == due_ms
                report[task_id] = round(run.t_ms - due_ms, 1)
        early = {t: ms for t, ms in report.items() if ms < -EARLY_MS}
        late = {t: ms for t, ms in report.items() if ms > LATE_MS + noise_ms}
        assert early == {}, report
        assert late == {}, (report, noise_ms)
    finally:
        client.close()
        for app in apps.values():
            await app.close()
