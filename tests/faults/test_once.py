"""Once across workers: three worker processes share one Redis and 10,000 due tasks."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

import duetime
from tests.faults.harness import Workers, counts
from tests.helpers import eventually

N = 10_000


@pytest.mark.slow
async def test_every_task_runs_exactly_once_across_three_workers(
    redis_url: str, namespace: str, app: duetime.App, workers: Workers
) -> None:
    # A lease long enough that a CPU-starved worker (3 processes, 2 cores) never loses
    # one: any duplicate here is a double claim, not a legitimate redelivery.
    procs = [workers.start(redis_url, namespace, lease=20.0, concurrency=200) for _ in range(3)]
    for proc in procs:
        proc.wait_ready()
    # Already due when written, and written while all three wait: they race for the
    # same backlog from the first chunk on.
    past = datetime.now(UTC) - timedelta(seconds=1)
    await app.schedule_many(
        duetime.Task("work", f"t{i}", at=past, payload={"i": i}) for i in range(N)
    )
    await eventually(
        lambda: len(counts(workers.ledger(), "effect")) >= N, 30, "every task's effect"
    )

    async def settled() -> bool:
        return (await app.counts("work")) == {"due": 0, "running": 0, "dead": 0}

    await eventually(settled, 10, "nothing left due, running or dead")
    ledger = workers.ledger()
    effects = counts(ledger, "effect")
    starts = counts(ledger, "start")
    assert set(effects) == {f"t{i}" for i in range(N)}
    assert [t for t, n in effects.items() if n != 1] == []
    assert [t for t, n in starts.items() if n != 1] == []
    # Every run was a first attempt with its own token.
    assert {e.attempt for e in ledger} == {1}
    tokens = [e.token for e in ledger if e.kind == "start"]
    assert len(set(tokens)) == N
    # The three really raced: each ran a share of the backlog.
    by_pid = Counter(e.pid for e in ledger if e.kind == "effect")
    assert set(by_pid) == {p.pid for p in procs}, by_pid
    assert all(p.alive() for p in procs), workers.logs()
    assert await app.list("work", "dead") == []
