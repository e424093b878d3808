"""Dropped connections: CLIENT KILL of the worker's command and pub/sub connections, again
and again, while tasks flow; and wake-ups that still arrive right after a pub/sub kill."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import redis.asyncio as aredis

import duetime
from duetime.stores.redis.resp import client as resp_client
from tests.faults.harness import ReplyDropProxy, Workers, by_task, counts
from tests.helpers import eventually, running
from tests.servers import RedisServer


async def _schedule(app: duetime.App, task_id: str, **options: object) -> int:
    """Schedule until acknowledged (again is safe); the due time in ms."""
    deadline = time.monotonic() + 10
    while True:
        try:
            due = await app.schedule("work", task_id, **options)  # type: ignore[call-overload]
        except duetime.StoreUnavailable:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
            continue
        return int(due.timestamp() * 1000 + 0.5)


@pytest.mark.slow
async def test_tasks_flow_through_repeated_client_kills(
    redis_url: str, namespace: str, app: duetime.App, admin: aredis.Redis, workers: Workers
) -> None:
    n = 400
    kills = {"normal": 0, "pubsub": 0}
    # Stopped by a flag, not by cancel(): redis-py on Python 3.11 can swallow a cancellation
    # that arrives as a command completes, and the killer would then run on for ever.
    stop = asyncio.Event()

    async def killer() -> None:
        while not stop.is_set():
            for kind in ("normal", "pubsub", "normal"):
                kills[kind] += await admin.client_kill_filter(_type=kind)
                await asyncio.sleep(0.03)

    worker = workers.start(redis_url, namespace, mode="sleep:0.05", lease=2.0, concurrency=64)
    worker.wait_ready()
    killing = asyncio.create_task(killer())
    try:
        for i in range(n):
            await _schedule(app, f"c{i}", delay=(i % 7) * 0.05)
            await asyncio.sleep(0.003)
        try:
            await eventually(
                lambda: len(by_task(workers.ledger(), "effect")) == n, 15, "every task ran"
            )
        except AssertionError:
            stop.set()
            await asyncio.wait_for(killing, 5)
            missing = sorted({f"c{i}" for i in range(n)} - set(by_task(workers.ledger(), "effect")))
            states = {}
            for task_id in missing[:5]:
                try:
                    states[task_id] = await app.get("work", task_id)
                except duetime.StoreUnavailable:  # see the test below
                    states[task_id] = await app.get("work", task_id)
            raise AssertionError(
                f"{len(missing)} tasks never ran ({missing[:10]}...); worker alive: "
                f"{worker.alive()}; {states}"
            ) from None
    finally:
        stop.set()
        await asyncio.wait_for(killing, 5)
    # The faults really happened, to the worker's connections too (the only pub/sub
    # connection is the worker's).
    assert kills["normal"] > 10 and kills["pubsub"] > 5, kills

    async def settled() -> bool:
        # A caller may retry a read that met a dropped connection (the dedicated test
        # below asserts that it should not have to).
        try:
            return (await app.counts("work")) == {"due": 0, "running": 0, "dead": 0}
        except duetime.StoreUnavailable:
            return False

    await eventually(settled, 10, "nothing left due, running or dead")
    assert worker.alive(), worker.log()
    effects = counts(workers.ledger(), "effect")
    assert set(effects) == {f"c{i}" for i in range(n)}
    # At-least-once: a repeat needs a lost lease or a lost reply, one per kill at most.
    dups = [t for t, k in effects.items() if k > 1]
    assert len(dups) <= kills["normal"], dups


@pytest.mark.slow
async def test_a_task_scheduled_right_after_a_pubsub_kill_runs_promptly(
    redis_url: str, namespace: str, app: duetime.App, admin: aredis.Redis, workers: Workers
) -> None:
    rounds = 6
    # Asleep on an hour between looks (max_idle): a task runs in time only if it is woken.
    worker = workers.start(redis_url, namespace, mode="ledger", lease=5.0, max_idle=3600)
    worker.wait_ready()
    # Warm up: the worker answers wake-ups at all.
    await _schedule(app, "warm")
    await eventually(lambda: "warm" in by_task(workers.ledger(), "effect"), 5, "warm-up")

    for k in range(rounds):
        # Idle: nothing due or running, so only a wake-up (the channel's own, or the look
        # at everything once it reconnected) makes the worker look again.
        await asyncio.sleep(0.2 + 0.1 * k)
        assert await admin.client_kill_filter(_type="pubsub") >= 1
        task_id = f"p{k}"
        await _schedule(app, task_id)

        def started(task_id: str = task_id) -> bool:
            return task_id in by_task(workers.ledger(), "start")

        await eventually(started, 25, f"{task_id} started")
    assert worker.alive(), worker.log()


async def test_producer_calls_ride_over_a_dropped_connection(
    app: duetime.App, admin: aredis.Redis
) -> None:
    """A connection the server dropped (CLIENT KILL, an idle timeout, a restart) is
    reconnected by the client: the next call succeeds, reads as well as writes."""
    calls: dict[str, Callable[[], Awaitable[object]]] = {
        "schedule": lambda: app.schedule("work", "a", delay=60),
        "get": lambda: app.get("work", "a"),
        "list": lambda: app.list("work", "due"),
        "counts": lambda: app.counts("work"),
        "cancel": lambda: app.cancel("work", "nope"),
    }
    failed = {}
    await app.schedule("work", "a", delay=60)
    for name, call in calls.items():
        await app.counts("work")  # the pool holds an idle connection
        assert await admin.client_kill_filter(_type="normal") >= 1
        try:
            await call()
        except duetime.StoreUnavailable as exc:
            failed[name] = str(exc)
    assert failed == {}


@pytest.fixture
async def behind_proxy(
    redis_server: RedisServer, namespace: str, workers: Workers
) -> AsyncIterator[tuple[duetime.App, ReplyDropProxy]]:
    """A producer whose replies go through a proxy that can lose one, and a ledger worker
    on Redis itself; warmed up, so the scripts are loaded and a lost reply is a real
    outcome."""
    proxy = ReplyDropProxy(redis_server.port).start()
    app = duetime.App(proxy.url, namespace=namespace)
    app.declare("work")
    try:
        workers.start(redis_server.url, namespace, mode="ledger", lease=5.0).wait_ready()
        await app.schedule("work", "warm")
        await eventually(lambda: "warm" in by_task(workers.ledger(), "effect"), 5, "warm-up")
        yield app, proxy
    finally:
        await app.close()
        proxy.close()


@pytest.mark.slow
async def test_a_schedule_whose_reply_was_lost_runs_its_task_once(
    behind_proxy: tuple[duetime.App, ReplyDropProxy], workers: Workers
) -> None:
    """The reply to schedule() is lost after Redis carried it out; the client sends it again
    (redis-py and duetime resend on a dropped connection). One schedule() call must still
    mean one run, even when a worker claims the task between the two sends."""
    app, proxy = behind_proxy
    proxy.drop_next(hold=0.5)  # the worker claims and runs it during these 0.5 s
    await app.schedule("work", "once")
    assert proxy.dropped == 1

    async def settled() -> bool:
        return (await app.counts("work")) == {"due": 0, "running": 0, "dead": 0}

    await eventually(lambda: "once" in by_task(workers.ledger(), "effect"), 5, "it ran")
    await eventually(settled, 5, "nothing left due or running")
    await asyncio.sleep(0.5)  # a second run, if any, has started by now
    assert counts(workers.ledger(), "start")["once"] == 1, workers.ledger()


@pytest.mark.slow
@pytest.mark.parametrize("due_in", [0, 3600], ids=["due-now", "due-in-an-hour"])
async def test_a_submit_whose_reply_was_lost_makes_one_task(
    behind_proxy: tuple[duetime.App, ReplyDropProxy], workers: Workers, due_in: int
) -> None:
    """As above for submit(), whose id duetime draws: the resent call must not take its own
    task for another's and draw a second id. Due now, the task runs once; due in an hour,
    one task waits (the resend finds its own record under the id)."""
    app, proxy = behind_proxy
    proxy.drop_next(hold=0.5)
    task_id = await app.submit("work", delay=due_in, payload={"n": 1})
    assert proxy.dropped == 1

    if due_in:
        assert await app.counts("work") == {"due": 1, "running": 0, "dead": 0}
        info = await app.get("work", task_id)
        assert info is not None and info.payload == {"n": 1}
        return
    await eventually(lambda: task_id in by_task(workers.ledger(), "effect"), 5, "it ran")
    await asyncio.sleep(0.5)  # a second run, or a second task, has started by now
    started = counts(workers.ledger(), "start")
    assert len(started) == 2 and started[task_id] == 1, workers.ledger()
    assert await app.counts("work") == {"due": 0, "running": 0, "dead": 0}


@pytest.mark.slow
async def test_a_call_whose_reply_never_comes_is_sent_again(
    behind_proxy: tuple[duetime.App, ReplyDropProxy], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reply lost on a connection that stays open (a network that drops packets and sends
    no reset): the call runs out of time, goes again on another connection, and succeeds."""
    app, proxy = behind_proxy
    monkeypatch.setattr(resp_client, "CALL_TIMEOUT_SECONDS", 0.5)
    await app.close()  # opened again by the next call, with the shorter deadline
    proxy.drop_next(hold=60)  # the connection is left open, its replies swallowed
    started = time.monotonic()
    await asyncio.wait_for(app.schedule("work", "silent", delay=3600, payload={"n": 1}), 10)
    assert proxy.dropped == 1
    assert time.monotonic() - started < 5
    info = await app.get("work", "silent")
    assert info is not None and info.payload == {"n": 1}


@pytest.mark.slow
async def test_a_caller_cancelled_while_it_waits_for_a_reply_is_cancelled(
    behind_proxy: tuple[duetime.App, ReplyDropProxy],
) -> None:
    """Cancelling a call that waits on Redis cancels it: it is not taken for a timeout and
    sent again."""
    app, proxy = behind_proxy
    proxy.drop_next(hold=60)
    call = asyncio.ensure_future(app.schedule("work", "cancelled", delay=3600))
    await eventually(lambda: proxy.dropped == 1, 5, "the reply was swallowed")
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(call, 5)
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


@pytest.mark.slow
async def test_a_claim_whose_reply_was_lost_runs_its_tasks_once_at_once(
    redis_server: RedisServer, namespace: str, workers: Workers
) -> None:
    """The reply to a claim is lost (F10): the resent call gets the same claims back, so the
    task is neither lost nor left to wait out its lease, and it runs once, as attempt 1."""
    lease = 1.0
    proxy = ReplyDropProxy(redis_server.port).start()
    app = duetime.App(redis_server.url, namespace=namespace)
    app.declare("work")
    try:
        worker = workers.start(proxy.url, namespace, mode="ledger", lease=lease).wait_ready()
        await asyncio.sleep(0.2)  # its first claims are answered
        proxy.drop_next(marker=b"lost-claim", hold=0.1)
        due_ms = await _schedule(app, "lost-claim")
        await eventually(
            lambda: "lost-claim" in by_task(workers.ledger(), "effect"), 5, "it ran at last"
        )
        assert proxy.dropped == 1
        (run,) = by_task(workers.ledger(), "start")["lost-claim"]
        # Well before the lease of the lost claim would have run out: the claim was replayed.
        assert run.t_ms - due_ms < lease * 1000 - 50, run.t_ms - due_ms
        assert run.attempt == 1
        assert worker.alive()

        async def settled() -> bool:  # the outcome follows the handler's effect
            return (await app.counts("work")) == {"due": 0, "running": 0, "dead": 0}

        await eventually(settled, 5, "its outcome settled")
    finally:
        await app.close()
        proxy.close()


@pytest.mark.slow
async def test_a_settle_sent_again_after_its_reply_was_lost_keeps_its_outcome(
    redis_server: RedisServer,
    namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The reply to a settle never comes (a network that drops packets): the call runs out
    of time and goes again. The second send finds the outcome the first one kept: the task
    ran once, and no lease is reported lost."""
    monkeypatch.setattr(resp_client, "CALL_TIMEOUT_SECONDS", 0.5)
    proxy = ReplyDropProxy(redis_server.port).start()
    worker_app = duetime.App(proxy.url, namespace=namespace)
    producer = duetime.App(redis_server.url, namespace=namespace)
    producer.declare("work")
    runs: list[str] = []

    @worker_app.task("work")
    async def work(payload: dict[str, object], ctx: duetime.Context) -> None:
        runs.append(ctx.task_id)
        if ctx.task_id == "once":  # "warm" loaded the settle script first
            proxy.drop_next(hold=60)  # the next reply, the settle's, is swallowed

    async def settled() -> bool:
        return (await producer.counts("work")) == {"due": 0, "running": 0, "dead": 0}

    try:
        with caplog.at_level(logging.WARNING, logger="duetime"):
            async with running(worker_app):
                await producer.schedule("work", "warm")
                await eventually(settled, 5, "the warm-up ran")
                await producer.schedule("work", "once")
                await eventually(lambda: proxy.dropped == 1, 5, "the settle's reply was lost")
                await eventually(settled, 5, "its outcome kept")
                await asyncio.sleep(0.3)
        assert runs == ["warm", "once"]
        lost = [r.getMessage() for r in caplog.records if "lease lost" in r.getMessage()]
        assert lost == []
    finally:
        await worker_app.close()
        await producer.close()
        proxy.close()
