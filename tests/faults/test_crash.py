"""Worker crashes and pauses: SIGKILL mid-handler (redelivery after the lease), a task that
stalls every worker that picks it up (dead letters after max_stalls), and a SIGSTOP longer
than the lease (the paused worker's outcome is fenced off by its token)."""

from __future__ import annotations

import asyncio
import signal

import pytest

import duetime
from tests.faults.harness import WorkerProcess, Workers, by_task, counts, wall_ms
from tests.helpers import eventually

LEASE = 1.0


@pytest.mark.slow
async def test_sigkill_mid_handler_reruns_each_task_after_its_lease_expires(
    redis_url: str, namespace: str, app: duetime.App, workers: Workers
) -> None:
    n = 20
    first = workers.start(
        redis_url, namespace, mode="sleep:60", lease=LEASE, concurrency=32, timeout=120
    ).wait_ready()
    await app.schedule_many(duetime.Task("work", f"k{i}") for i in range(n))
    await eventually(
        lambda: len(counts(workers.ledger(), "start")) == n, 10, "the first worker starts all"
    )
    second = workers.start(
        redis_url, namespace, mode="ledger", lease=LEASE, concurrency=32
    ).wait_ready()

    # Hold the tasks for twice the lease: the first worker's renewals must keep them,
    # with no re-run anywhere (neither by itself nor by the second worker).
    await asyncio.sleep(2 * LEASE)
    ledger = workers.ledger()
    assert len(ledger) == n, workers.logs()
    assert {e.pid for e in ledger} == {first.pid}

    kill_ms = wall_ms()
    first.kill()
    # Leases are no longer renewed: these deadlines are final.
    running = await app.list("work", "running", limit=n)
    assert len(running) == n
    deadline_ms = {
        info.task_id: info.lease_expires.timestamp() * 1000
        for info in running
        if info.lease_expires is not None
    }
    for task_id, deadline in deadline_ms.items():
        # Renewed until the kill (held for two leases, it was still live), and it runs
        # out at most one lease after the kill.
        assert kill_ms - 1 <= deadline <= kill_ms + LEASE * 1000 + 1, task_id

    await eventually(lambda: len(counts(workers.ledger(), "effect")) == n, 10, "every task re-run")

    async def settled() -> bool:
        return (await app.counts("work")) == {"due": 0, "running": 0, "dead": 0}

    await eventually(settled, 5, "nothing left due, running or dead")

    ledger = workers.ledger()
    starts, effects = by_task(ledger, "start"), by_task(ledger, "effect")
    assert set(effects) == {f"k{i}" for i in range(n)}
    for task_id, runs in starts.items():
        assert [e.pid for e in runs] == [first.pid, second.pid], task_id
        killed, rerun = runs
        assert (killed.attempt, rerun.attempt) == (1, 2), task_id
        assert rerun.token > killed.token, task_id
        # Not before the lease ran out, and not long after.
        assert rerun.t_ms >= deadline_ms[task_id] - 1, (task_id, rerun.t_ms - kill_ms)
        assert rerun.t_ms <= deadline_ms[task_id] + 2000, (task_id, rerun.t_ms - kill_ms)
        assert [(e.pid, e.token) for e in effects[task_id]] == [(second.pid, rerun.token)]
    # A re-run is the same occurrence: ctx.due and ctx.occurrence (the idempotency key
    # handlers are told to use) are the same on every attempt and every worker.
    for task_id, (killed, rerun) in starts.items():
        assert (rerun.occurrence, rerun.due_ms) == (killed.occurrence, killed.due_ms), task_id


@pytest.mark.slow
async def test_a_task_that_kills_every_worker_ends_in_the_dead_letters(
    redis_url: str, namespace: str, app: duetime.App, workers: Workers
) -> None:
    max_stalls = 2

    def start_worker() -> WorkerProcess:
        return workers.start(
            redis_url, namespace, mode="hang", lease=LEASE, max_stalls=max_stalls, timeout=60
        ).wait_ready()

    current = start_worker()
    await app.schedule("work", "poison")
    kills = 0
    seen = 0
    while True:
        # The next worker waits, ready, while the current one holds the task.
        spare = start_worker()

        async def picked_up_or_dead(seen: int = seen) -> bool:
            if len(workers.ledger()) > seen:
                return True
            return (await app.counts("work"))["dead"] == 1

        await eventually(picked_up_or_dead, 10, "the task picked up again, or dead")
        ledger = workers.ledger()
        if len(ledger) == seen:
            break  # dead, and nobody picked it up
        assert len(ledger) == seen + 1
        seen += 1
        holder = next(w for w in workers.started if w.pid == ledger[-1].pid)
        assert holder is current or holder is spare
        holder.kill()
        kills += 1
        assert kills <= max_stalls + 1, workers.logs()
        current = spare if holder is current else current

    dead = await app.list("work", "dead")
    assert [d.task_id for d in dead] == ["poison"]
    error = (dead[0].error or "").lower()
    assert "stall" in error or "lease" in error, dead[0].error
    # Picked up, and killed, exactly max_stalls + 1 times.
    starts = [e for e in workers.ledger() if e.kind == "start"]
    assert kills == max_stalls + 1
    assert len(starts) == max_stalls + 1
    assert [e.attempt for e in starts] == list(range(1, max_stalls + 2))
    tokens = [e.token for e in starts]
    assert tokens == sorted(tokens) and len(set(tokens)) == len(tokens)
    # Each pick-up came only after the previous holder's lease ran out.
    for before, after in zip(starts, starts[1:], strict=False):
        assert after.t_ms - before.t_ms >= LEASE * 1000 - 50
    # And it stays dead: a live worker does not run it again.
    assert any(w.alive() for w in workers.started)
    await asyncio.sleep(LEASE * 1.5)
    assert len(workers.ledger()) == max_stalls + 1
    assert (await app.counts("work")) == {"due": 0, "running": 0, "dead": 1}
    assert (await app.get("work", "poison")).state == "dead"  # type: ignore[union-attr]
    # Every pick-up was an attempt at the same occurrence.
    assert len({(e.occurrence, e.due_ms) for e in starts}) == 1, starts


@pytest.mark.slow
async def test_a_worker_paused_past_its_lease_is_fenced_off(
    redis_url: str, namespace: str, app: duetime.App, workers: Workers
) -> None:
    """SIGSTOP a worker mid-handler for three leases (a long GC or VM pause): another worker
    runs the task again; when the paused one wakes, its outcome is refused by the token and
    does not disturb the run that superseded it."""
    paused = workers.start(redis_url, namespace, mode="sleep:0.5", lease=LEASE)
    paused.wait_ready()
    await app.schedule("work", "p")
    await eventually(lambda: len(workers.ledger()) >= 1, 5, "the task started")
    paused.signal(signal.SIGSTOP)
    (first,) = workers.ledger()
    other = workers.start(redis_url, namespace, mode="sleep:4", lease=LEASE).wait_ready()
    try:
        await eventually(
            lambda: len(by_task(workers.ledger(), "start").get("p", [])) == 2,
            LEASE + 3,
            "run again by the other worker",
        )
        second = by_task(workers.ledger(), "start")["p"][1]
        assert second.pid == other.pid
        assert second.attempt == 2 and second.token > first.token
        assert second.t_ms - first.t_ms >= LEASE * 1000 - 50
        await asyncio.sleep(max(0.0, 3 * LEASE - (wall_ms() - first.t_ms) / 1000))
    finally:
        paused.signal(signal.SIGCONT)
    # The paused worker wakes, finishes its handler and tries to settle: refused.
    await eventually(lambda: "lease lost" in paused.log(), 5, "the stale outcome refused")
    info = await app.get("work", "p")
    assert info is not None and info.state == "running", info  # still the other's run
    assert "p" not in {
        e.task_id for e in workers.ledger() if e.pid == other.pid and e.kind == "effect"
    }
    await eventually(
        lambda: any(e.kind == "effect" and e.pid == other.pid for e in workers.ledger()),
        6,
        "the superseding run finished",
    )

    async def settled() -> bool:
        return (await app.counts("work")) == {"due": 0, "running": 0, "dead": 0}

    await eventually(settled, 3, "nothing left due, running or dead")
    effects = by_task(workers.ledger(), "effect")["p"]
    # One duplicate for one pause, and the stale one is the paused worker's.
    assert sorted((e.pid, e.token) for e in effects) == sorted(
        [(paused.pid, first.token), (other.pid, second.token)]
    )
    assert paused.alive() and other.alive()
