"""Flow control across real worker processes on one Redis: a rate, a global concurrency
through a SIGKILL, a handler's RateLimited, and a pause through a restart of every worker.
Times are the ledger's (each handler's start and end, by this host's wall clock)."""

from __future__ import annotations

import asyncio
import signal
from datetime import UTC, datetime, timedelta

import pytest

import duetime
from tests.faults.harness import Entry, WorkerProcess, Workers, by_task, counts, wall_ms
from tests.helpers import eventually

pytestmark = pytest.mark.slow


def most_in_a_second(starts: list[float]) -> int:
    """The most starts in any one-second window (each window opening at a start)."""
    starts = sorted(starts)
    most, first = 0, 0
    for last, t in enumerate(starts):
        while t - starts[first] >= 1000:
            first += 1
        most = max(most, last - first + 1)
    return most


def most_at_once(spans: list[tuple[float, float]]) -> tuple[int, float]:
    """The most spans open at one moment, and the first moment it was reached."""
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    now = most = 0
    at = 0.0
    for t, step in edges:
        now += step
        if now > most:
            most, at = now, t
    return most, at


async def test_a_rate_holds_across_three_workers(
    redis_url: str, namespace: str, app: duetime.App, workers: Workers
) -> None:
    for _ in range(3):
        workers.start(redis_url, namespace, rate="50/s")
    for w in workers.started:
        w.wait_ready()
    began = wall_ms()
    await app.schedule_many(duetime.Task("work", f"t{i}") for i in range(500))
    await eventually(
        lambda: len(counts(workers.ledger(), "effect")) == 500, 15, "all 500 tasks ran"
    )
    starts = [e.t_ms for e in workers.ledger() if e.kind == "start"]
    assert len(starts) == 500 and len({e.pid for e in workers.ledger()}) > 1
    # The store times the claims: in any second, the burst and the rate, 50 + 50. A handler
    # starts a little after its claim (more on a loaded machine), which can bring a start or
    # two of the second before into a window of starts: SLACK.
    slack = 2
    assert most_in_a_second(starts) <= 50 + 50 + slack, most_in_a_second(starts)
    # The burst spent, the steady rate: claims 20 ms apart, 51 at most in a second.
    steady = [t for t in starts if t >= min(starts) + 1000]
    assert most_in_a_second(steady) <= 51 + slack, most_in_a_second(steady)
    assert max(starts) - began < 12_000


async def test_global_concurrency_holds_across_workers_and_a_killed_workers_slot_comes_back(
    redis_url: str, namespace: str, app: duetime.App, workers: Workers
) -> None:
    lease = 1.0
    procs = [
        workers.start(
            redis_url,
            namespace,
            global_concurrency=3,
            concurrency=10,
            mode="sleep:0.2",
            lease=lease,
        )
        for _ in range(3)
    ]
    for w in procs:
        w.wait_ready()
    await app.schedule_many(duetime.Task("work", f"t{i}") for i in range(60))
    await eventually(lambda: len(counts(workers.ledger(), "effect")) >= 8, 10, "a first few ran")

    # Kill a worker while it runs a handler: its slot is held until the lease lapses.
    def busy() -> list[WorkerProcess]:
        return [w for w in procs if _running_in(workers.ledger(), w.pid)]

    await eventually(lambda: bool(busy()), 5, "a worker running a handler")
    victim = busy()[0]
    victim.kill()
    killed_ms = wall_ms()
    await eventually(
        lambda: set(counts(workers.ledger(), "effect")) == {f"t{i}" for i in range(60)},
        30,
        "every task ran",
    )

    ledger = workers.ledger()
    ended = {(e.task_id, e.token) for e in ledger if e.kind == "effect"}
    cut = [e for e in ledger if e.pid == victim.pid and (e.task_id, e.token) not in ended]
    assert cut, "the kill came between two runs"  # a run cut short held its slot
    spans = _spans(ledger, killed_ms)
    most, _ = most_at_once(spans)
    assert most == 3, most  # reached, and never more
    # The killed run held its slot until its lease lapsed; then three ran at once again.
    after, at = most_at_once([(s, e) for s, e in spans if s >= killed_ms + lease * 1000])
    assert after == 3, (after, at - killed_ms)


def _running_in(ledger: list[Entry], pid: int) -> bool:
    ended = {(e.task_id, e.token) for e in ledger if e.kind == "effect"}
    return any(
        e.pid == pid and e.kind == "start" and (e.task_id, e.token) not in ended for e in ledger
    )


def _spans(ledger: list[Entry], killed_ms: float) -> list[tuple[float, float]]:
    """Each run from its start to its end; a run cut short by the kill ends at the kill."""
    ends = {(e.task_id, e.token): e.t_ms for e in ledger if e.kind == "effect"}
    return [
        (e.t_ms, ends.get((e.task_id, e.token), killed_ms)) for e in ledger if e.kind == "start"
    ]


async def test_rate_limited_holds_the_type_on_every_worker_and_counts_no_attempt(
    redis_url: str, namespace: str, app: duetime.App, workers: Workers
) -> None:
    for _ in range(3):
        workers.start(redis_url, namespace, rate_limited=2.0)
    for w in workers.started:
        w.wait_ready()
    await app.schedule("work", "trigger")
    await eventually(lambda: "trigger" in counts(workers.ledger(), "start"), 10, "the trigger ran")

    async def handed_back() -> bool:
        info = await app.get("work", "trigger")
        return info is not None and info.state == "due"

    await eventually(handed_back, 5, "the trigger back to due")
    info = await app.get("work", "trigger")
    assert info is not None and info.attempts == 0 and info.error is None  # none counted
    await app.schedule_many(duetime.Task("work", f"t{i}") for i in range(30))
    await eventually(lambda: len(counts(workers.ledger(), "effect")) == 31, 10, "all ran")

    ledger = workers.ledger()
    first, *rest = by_task(ledger, "start")["trigger"]
    others = [e for e in ledger if e.kind == "start" and e.task_id != "trigger"]
    assert len({e.pid for e in others}) > 1  # several workers took part
    assert min(e.t_ms for e in [*rest, *others]) >= first.t_ms + 2000
    assert [e.attempt for e in [first, *rest]] == [1, 1]


async def test_a_pause_holds_through_a_restart_of_every_worker_until_resumed(
    redis_url: str, namespace: str, app: duetime.App, workers: Workers
) -> None:
    procs = [workers.start(redis_url, namespace) for _ in range(2)]
    for w in procs:
        w.wait_ready()
    start = datetime.now(UTC)
    await app.schedule_many(
        duetime.Task("work", f"t{i}", at=start + timedelta(milliseconds=200 + 70 * i))
        for i in range(40)
    )  # due over 3 s
    await asyncio.sleep(0.5)
    await app.pause("work")
    paused_ms = wall_ms()
    for w in procs:
        w.signal(signal.SIGTERM)
    for w in procs:
        assert w.wait_exit(15) == 0, workers.logs()
    # Asleep on an hour between looks (max_idle): only the resume's wake-up starts them.
    again = [workers.start(redis_url, namespace, max_idle=3600) for _ in range(2)]
    for w in again:
        w.wait_ready()
    await asyncio.sleep(max(0.0, 3.5 - (datetime.now(UTC) - start).total_seconds()))
    quiet = [e for e in workers.ledger() if e.kind == "start" and e.t_ms > paused_ms + 1000]
    assert quiet == [], quiet
    assert (await app.counts("work"))["due"] > 0

    await app.resume("work")
    await eventually(lambda: len(counts(workers.ledger(), "effect")) == 40, 25, "all ran")
    late = [e for e in workers.ledger() if e.kind == "start" and e.t_ms > paused_ms + 1000]
    assert late and all(e.pid in {w.pid for w in again} for e in late)
