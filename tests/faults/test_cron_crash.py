"""A cron schedule whose ticks come faster than its lease, its worker SIGKILLed mid-run: the
crashed tick runs again under its own id as attempt 2, every later run is the first attempt
of its own tick, and every tick is run, missed or skipped, as the counters and logs say."""

from __future__ import annotations

import re
import signal
from datetime import datetime
from pathlib import Path

import pytest

import duetime
from tests.faults.harness import Entry, WorkerProcess, Workers, wall_ms
from tests.helpers import eventually

#: A tick every second, a lease of 3 s: a crash holds the schedule past several ticks.
EXPRESSION = "* * * * * *"
LEASE = 3.0
#: How long each run takes: long enough to be killed in the middle, shorter than a period.
RUN_S = 0.6
NAME = "work"
MISSED_LINE = re.compile(r"work/work: missed tick (\S+)")


def _unfinished(ledger: list[Entry]) -> list[Entry]:
    """The runs that started and have not written their effect."""
    done = {(e.occurrence, e.token) for e in ledger if e.kind == "effect"}
    return [e for e in ledger if e.kind == "start" and (e.occurrence, e.token) not in done]


def _tick(occurrence: str) -> int:
    return int(occurrence.rsplit("@", 1)[1])


@pytest.mark.slow
@pytest.mark.timeout(90)
@pytest.mark.parametrize(
    ("store", "overlap"), [("redis", "skip"), ("sqlite", "skip"), ("redis", "allow")]
)
async def test_a_cron_tick_killed_mid_run_runs_again_with_its_id_and_the_next_ones_as_their_own(
    store: str, overlap: str, redis_url: str, namespace: str, workers: Workers, tmp_path: Path
) -> None:
    url = redis_url if store == "redis" else f"sqlite:///{tmp_path / 'cron.db'}"

    def start() -> WorkerProcess:
        return workers.start(
            url, namespace, cron=EXPRESSION, overlap=overlap, mode=f"sleep:{RUN_S}", lease=LEASE
        ).wait_ready()

    first = start()
    await eventually(
        lambda: sum(e.kind == "effect" for e in workers.ledger()) >= 2, 10, "two runs done"
    )
    await eventually(lambda: bool(_unfinished(workers.ledger())), 5, "a run under way")
    first.kill()
    kill_ms = wall_ms()
    (killed,) = _unfinished(workers.ledger())
    assert (killed.pid, killed.attempt, killed.occurrence) == (
        first.pid,
        1,
        f"{NAME}@{killed.due_ms}",
    )

    second = start()
    ready_ms = wall_ms()

    def later_runs_done() -> bool:
        return sum(e.kind == "effect" and e.pid == second.pid for e in workers.ledger()) >= 5

    await eventually(later_runs_done, 20, "the crashed tick and four more run")
    second.signal(signal.SIGTERM)
    assert second.wait_exit(20) == 0, workers.logs()

    ledger = workers.ledger()
    starts = [e for e in ledger if e.kind == "start"]
    # The crashed tick runs again under its own id, as attempt 2, once the lease that held
    # it ran out (and the second worker was up).
    reruns = [e for e in starts if e.occurrence == killed.occurrence and e != killed]
    assert [(e.pid, e.attempt, e.due_ms) for e in reruns] == [(second.pid, 2, killed.due_ms)], (
        workers.logs()
    )
    (rerun,) = reruns
    assert rerun.t_ms <= max(kill_ms + LEASE * 1000, ready_ms) + 2000, rerun.t_ms - kill_ms
    if overlap == "skip":
        assert min((e for e in starts if e.pid == second.pid), key=lambda e: e.t_ms) == rerun
    # Every other run is the first attempt of its own tick, and each tick ran once.
    others = [e for e in starts if e not in (killed, rerun)]
    assert {e.attempt for e in others} == {1}
    assert all(e.occurrence == f"{NAME}@{e.due_ms}" for e in others)
    effects = [_tick(e.occurrence) for e in ledger if e.kind == "effect"]
    assert len(effects) == len(set(effects)) and _tick(killed.occurrence) in effects

    # Every tick from the first up to the one the schedule waits for ran, or was counted
    # (and logged) as missed, or counted as skipped: none twice, none lost.
    reader = duetime.App(url, namespace=namespace)
    reader.declare(NAME)
    try:
        (info,) = await reader.crons()
        (pending,) = await reader.next_runs(NAME, 1)
        handed_off = [t.task_id for t in await reader.list(NAME, "due") if t.task_id != NAME]
    finally:
        await reader.close()
    first_tick = min(_tick(e.occurrence) for e in starts)
    ticks = (round(pending.timestamp() * 1000) - first_tick) // 1000
    ran = set(effects) | {_tick(t) for t in handed_off}
    assert len(ran) + info.missed_count + info.skipped_count == ticks, (sorted(ran), info)
    logged = [
        round(datetime.fromisoformat(m).timestamp() * 1000)
        for m in MISSED_LINE.findall(workers.logs())
    ]
    assert len(logged) == info.missed_count and not set(logged) & ran, (logged, sorted(ran))
    if overlap == "skip":
        # The tick after the crashed one came due while the lease held the schedule, and
        # could not start before its successor.
        assert _tick(killed.occurrence) + 1000 in logged
