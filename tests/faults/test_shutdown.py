"""Graceful shutdown: SIGTERM lets running handlers finish within the grace period and hands
every other claimed task back to due at once, never leaving it to a lease expiry."""

from __future__ import annotations

import signal
import time

import pytest

import duetime
from tests.faults.harness import WorkerProcess, Workers, by_task, counts
from tests.helpers import eventually

#: Long enough that a task left in running would visibly stay there for the whole test.
LONG_LEASE = 30.0
#: What process exit may add to the grace period (event loop shutdown, interpreter exit).
EXIT_MARGIN = 2.0


async def _busy_worker(
    app: duetime.App, workers: Workers, url: str, namespace: str, grace: float, n: int
) -> tuple[WorkerProcess, dict[str, int]]:
    """A worker with a grace period, running n handlers that would take a minute; returns
    it with the due times of their tasks."""
    worker = workers.start(url, namespace, lease=LONG_LEASE, grace=grace, timeout=120)
    worker.wait_ready()
    dues = await _schedule(app, n, 60.0)
    await eventually(lambda: len(counts(workers.ledger(), "start")) == n, 10, "handlers running")
    return worker, dues


async def _schedule(app: duetime.App, n: int, sleep: float) -> dict[str, int]:
    dues = {}
    for i in range(n):
        due = await app.schedule("work", f"g{i}", payload={"sleep": sleep})
        dues[f"g{i}"] = int(due.timestamp() * 1000 + 0.5)
    return dues


@pytest.mark.slow
async def test_sigterm_lets_running_handlers_finish_and_leaves_the_rest_due(
    redis_url: str, namespace: str, app: duetime.App, workers: Workers
) -> None:
    grace, handler_s, concurrency, n = 6.0, 1.5, 4, 10
    worker = workers.start(
        redis_url, namespace, lease=LONG_LEASE, concurrency=concurrency, grace=grace
    ).wait_ready()
    await _schedule(app, n, handler_s)
    await eventually(
        lambda: len(counts(workers.ledger(), "start")) == concurrency, 10, "handlers running"
    )
    sent = time.monotonic()
    worker.signal(signal.SIGTERM)
    code = worker.wait_exit(grace + EXIT_MARGIN + 5)
    took = time.monotonic() - sent
    assert code == 0, worker.log()
    # It waited for the handlers (about handler_s), not for the whole grace period.
    assert took <= handler_s + EXIT_MARGIN, took

    ledger = workers.ledger()
    started, done = by_task(ledger, "start"), by_task(ledger, "effect")
    assert len(started) == concurrency
    assert set(done) == set(started), "a running handler did not finish"
    # Checked at once: nothing waits in running for a 30 s lease to run out.
    assert await app.counts("work") == {"due": n - concurrency, "running": 0, "dead": 0}
    for task_id in started:
        assert await app.get("work", task_id) is None, task_id
    left = {info.task_id for info in await app.list("work", "due")}
    assert left == {f"g{i}" for i in range(n)} - set(started)
    assert "worker stopped" in worker.log()


@pytest.mark.slow
async def test_sigterm_cuts_a_handler_longer_than_the_grace_and_hands_its_task_back(
    redis_url: str, namespace: str, app: duetime.App, workers: Workers
) -> None:
    grace, n = 1.0, 3
    worker, dues = await _busy_worker(app, workers, redis_url, namespace, grace, n)
    sent = time.monotonic()
    worker.signal(signal.SIGTERM)
    code = worker.wait_exit(grace + EXIT_MARGIN + 5)
    took = time.monotonic() - sent
    assert code == 0, worker.log()
    # The handlers had their grace period, and no more.
    assert grace * 0.9 <= took <= grace + EXIT_MARGIN, took
    assert counts(workers.ledger(), "effect") == {}
    # Handed back at once (not after the 30 s lease), due when it was due before.
    assert await app.counts("work") == {"due": n, "running": 0, "dead": 0}
    for task_id, due_ms in dues.items():
        info = await app.get("work", task_id)
        assert info is not None and info.state == "due" and info.due is not None, task_id
        assert int(info.due.timestamp() * 1000 + 0.5) == due_ms, task_id

    # So another worker runs them right away.
    tokens = {e.task_id: e.token for e in workers.ledger()}
    workers.start(redis_url, namespace, mode="sleep:0", lease=LONG_LEASE).wait_ready()
    # A payload says sleep 60 s; the second worker's handler obeys it too, so look at
    # the starts: they must come well before the first worker's lease would have run out.
    await eventually(lambda: counts(workers.ledger(), "start").total() == 2 * n, 5, "re-runs start")
    for task_id, runs in by_task(workers.ledger(), "start").items():
        assert runs[1].token > tokens[task_id], task_id


@pytest.mark.slow
@pytest.mark.parametrize(
    ("signum", "says"),
    [
        (
            signal.SIGTERM,
            "SIGTERM: stopping; running handlers get 20 s to finish "
            "(a second SIGTERM or Ctrl-C stops at once)",
        ),
        (
            signal.SIGINT,
            "SIGINT: stopping; running handlers get 20 s to finish (a second Ctrl-C stops at once)",
        ),
    ],
)
async def test_a_second_signal_stops_at_once_and_hands_tasks_back(
    redis_url: str,
    namespace: str,
    app: duetime.App,
    workers: Workers,
    signum: signal.Signals,
    says: str,
) -> None:
    grace, n = 20.0, 3
    worker, _ = await _busy_worker(app, workers, redis_url, namespace, grace, n)
    sent = time.monotonic()
    worker.signal(signum)
    await eventually(lambda: "stopping" in worker.log(), 5, "the first signal seen")
    assert says in worker.log()  # and how not to wait
    worker.signal(signum)
    code = worker.wait_exit(grace)
    took = time.monotonic() - sent
    assert code == 0, worker.log()
    assert took <= EXIT_MARGIN, took
    assert await app.counts("work") == {"due": n, "running": 0, "dead": 0}
