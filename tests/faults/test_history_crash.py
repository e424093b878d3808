"""The run history after a SIGKILL: a worker process killed mid-handler settles nothing; the
attempts it was running appear in the history, as failed with "lease expired", once their
leases lapse and another worker's claim reaps them, followed by the attempts that ran them
again."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

import duetime
from tests.faults.harness import Workers, counts
from tests.helpers import eventually

LEASE = 1.0


@pytest.fixture(params=["redis", "sqlite"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "redis":
        redis_url: str = request.getfixturevalue("redis_url")
        return redis_url
    return f"sqlite:///{tmp_path / 'duetime.db'}"


@pytest.mark.slow
async def test_the_attempts_of_a_killed_worker_appear_once_their_leases_lapse(
    url: str, namespace: str, workers: Workers
) -> None:
    app = duetime.App(url, namespace=namespace)
    app.declare("work")
    try:
        first = workers.start(url, namespace, mode="sleep:60", lease=LEASE).wait_ready()
        await app.schedule_many(duetime.Task("work", f"k{i}") for i in range(3))
        await eventually(lambda: len(counts(workers.ledger(), "start")) == 3, 10, "all started")
        first.kill()
        # Killed mid-handler: nothing settled, nothing recorded yet.
        assert await app.history("work") == []

        second = workers.start(url, namespace, mode="ledger", lease=LEASE).wait_ready()

        async def six() -> bool:
            return len(await app.history("work")) == 6

        await eventually(six, 15, "the crashed attempts and the re-runs recorded")
        runs = await app.history("work")
    finally:
        await app.close()

    assert sorted((r.task_id, r.attempt, r.outcome) for r in runs) == [
        (f"k{i}", attempt, outcome)
        for i in range(3)
        for attempt, outcome in ((1, "failed"), (2, "done"))
    ]
    host = socket.gethostname()
    for r in runs:
        if r.outcome == "failed":  # the killed worker's attempt: what it did is unknown
            assert r.error == "lease expired (its worker stopped or hung)"
            assert r.worker is None and r.started is None and r.duration is None
        else:
            assert r.error is None and r.worker is not None
            assert r.worker.startswith(f"{host}-{second.pid}-")
    crashed = {r.task_id: r for r in runs if r.outcome == "failed"}
    for r in runs:
        if r.outcome == "done":  # the re-run came after the crash was found, of the same tick
            before = crashed[r.task_id]
            assert r.occurrence == before.occurrence
            assert r.finished is not None and before.finished is not None
            assert r.finished >= before.finished
