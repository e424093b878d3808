"""Flow control on each store: a type's gates (pause, hold, rate, global concurrency) as
claims and settles keep them, with explicit times, and as workers live them."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import duetime
from duetime.clock import epoch_ms
from duetime.partitions.layout import partition_of
from duetime.stores.base import Claim, ClaimBatch, NewTask, Outcome, Store
from duetime.stores.capabilities import GATES, use
from duetime.stores.gating import Gate
from duetime.testing import harness
from tests.helpers import ClaimSpy, eventually, record_text, running

T0 = 1_900_000_000_000
LEASE = 10_000
REC = record_text('{"n":1}')


async def put(store: Store, *ids: str, due: int = T0, task_type: str = "mail") -> None:
    await store.schedule(task_type, [NewTask(task_id, due, REC) for task_id in ids])


async def claim(
    store: Store, now: int = T0, limit: int = 100, gate: Gate | None = None
) -> ClaimBatch:
    return await store.claim(
        "mail",
        now_ms=now,
        limit=limit,
        lease_ms=LEASE,
        max_stalls=2,
        at_most_once=False,
        gate=gate,
    )


def ids(claims: list[Claim]) -> list[str]:
    return [c.id for c in claims]


# -- the store's gates, with explicit times ----------------------------------------------------


async def test_a_paused_type_starts_nothing_until_resumed(store: Store) -> None:
    gates = use(store, GATES)
    await put(store, "a", "b")

    assert await gates.set_paused("mail", True) is True
    assert await gates.set_paused("mail", True) is False  # paused already
    assert await gates.paused_types() == ["mail"]
    batch = await claim(store)
    assert batch.claims == [] and batch.open_ms is None
    assert batch.next_ms is None  # nothing to wake for: a resume wakes the workers
    assert await store.count("mail") == {"due": 2, "running": 0, "dead": 0}
    got = await store.get("mail", "a")
    assert got is not None and (got.state, got.due_ms, got.stalls) == ("due", T0, 0)

    assert await gates.set_paused("mail", False) is True
    assert await gates.paused_types() == []
    assert ids((await claim(store)).claims) == ["a", "b"]


async def test_a_paused_type_still_reaps_and_its_running_tasks_finish(store: Store) -> None:
    gates = use(store, GATES)
    await put(store, "a", "b")
    first = (await claim(store, limit=1)).claims
    await gates.set_paused("mail", True)

    # The running task's lease is the one time a worker still wakes for.
    assert (await claim(store)).next_ms == T0 + LEASE
    assert await store.settle("mail", [Outcome("done", first[0])], T0) == [True]
    assert await store.count("mail") == {"due": 1, "running": 0, "dead": 0}


async def test_a_rate_spaces_the_starts_and_tells_when_the_next_is_allowed(store: Store) -> None:
    await put(store, *(f"t{i}" for i in range(10)))
    gate = Gate(interval_ms=100.0, burst=2.0)  # 10/s, two at once

    first = await claim(store, gate=gate)
    assert ids(first.claims) == ["t0", "t1"]  # the burst
    assert first.open_ms == T0 + 100  # the next start the rate allows
    assert first.next_ms == T0 + LEASE  # the held tasks are not a time to wake for

    assert (await claim(store, T0 + 99, gate=gate)).claims == []
    assert ids((await claim(store, T0 + 100, gate=gate)).claims) == ["t2"]
    # Quiet for a while: the burst is back, never more.
    later = await claim(store, T0 + 5_000, gate=gate)
    assert ids(later.claims) == ["t3", "t4"] and later.open_ms == T0 + 5_100
    assert await store.count("mail") == {"due": 5, "running": 5, "dead": 0}


async def test_a_rate_with_nothing_held_back_sleeps_until_the_next_due_time(store: Store) -> None:
    await put(store, "now")
    await put(store, "later", due=T0 + 60_000)
    batch = await claim(store, gate=Gate(interval_ms=1000.0, burst=1.0))
    assert ids(batch.claims) == ["now"]
    assert batch.open_ms is None and batch.next_ms == T0 + LEASE


async def test_global_concurrency_caps_the_tasks_running_and_frees_a_slot_on_settle(
    store: Store,
) -> None:
    await put(store, *(f"t{i}" for i in range(5)))
    gate = Gate(max_running=2)

    first = await claim(store, gate=gate)
    assert ids(first.claims) == ["t0", "t1"]
    held = await claim(store, gate=gate)
    # Full: no time to wait for but the leases (a settle wakes the workers).
    assert held.claims == [] and held.open_ms is None and held.next_ms == T0 + LEASE
    assert await store.settle("mail", [Outcome("done", first.claims[0])], T0 + 1) == [True]
    assert ids((await claim(store, T0 + 2, gate=gate)).claims) == ["t2"]
    # A worker that died holds its slot until its lease lapses, then the slot comes back.
    assert (await claim(store, T0 + 3, gate=gate)).claims == []
    # Both leases lapsed: both slots are free, and the two tasks run again, first.
    again = await claim(store, T0 + 2 + LEASE, gate=gate)
    assert ids(again.claims) == ["t1", "t2"]


async def test_a_settle_that_frees_a_full_types_slot_wakes_its_workers(store: Store) -> None:
    await put(store, "a", "b")
    woken: list[str] = []
    listening = asyncio.create_task(store.listen(lambda t, due: woken.append(t)))
    try:
        first = await claim(store, gate=Gate(max_running=1))
        await claim(store, gate=Gate(max_running=1))  # finds it full
        await eventually(lambda: "*" in woken, what="the listener started")
        woken.clear()
        await store.settle("mail", [Outcome("done", first.claims[0])], T0 + 1)
        await eventually(lambda: "mail" in woken, 3, "a wake-up for the freed slot")
    finally:
        listening.cancel()
        await asyncio.gather(listening, return_exceptions=True)


async def test_a_hold_hands_the_task_back_uncounted_and_holds_the_whole_type(
    store: Store,
) -> None:
    await put(store, "a", "b")
    (first,) = (await claim(store, limit=1)).claims

    assert await store.settle("mail", [Outcome("hold", first, T0 + 2_000)], T0 + 5) == [True]
    got = await store.get("mail", "a")
    assert got is not None and (got.state, got.due_ms, got.stalls) == ("due", T0, 0)
    assert got.record == REC  # as it was: no attempt counted
    held = await claim(store, T0 + 1_999)
    assert held.claims == [] and held.open_ms == T0 + 2_000
    # A shorter hold does not cut a longer one short.
    await use(store, GATES).hold("mail", T0 + 1_000)
    assert (await claim(store, T0 + 1_500)).claims == []
    after = await claim(store, T0 + 2_000)
    assert ids(after.claims) == ["a", "b"] and after.claims[0].stalls == 0


async def test_a_stale_hold_holds_nothing(store: Store) -> None:
    await put(store, "a")
    (old,) = (await claim(store)).claims
    (new,) = (await claim(store, T0 + LEASE + 1)).claims  # the lease lapsed: claimed again

    assert await store.settle("mail", [Outcome("hold", old, T0 + 60_000)], T0 + LEASE + 2) == [
        False
    ]
    await store.settle("mail", [Outcome("release", new, new.due_ms)], T0 + LEASE + 3)
    assert ids((await claim(store, T0 + LEASE + 4)).claims) == ["a"]


# -- the App's calls, and workers ----------------------------------------------------------------


async def test_pause_and_resume_reach_a_sleeping_worker(app: duetime.App) -> None:
    # A worker asleep on a poll interval of an hour: only the resume's wake-up can start
    # the tasks in time, and a claim the pause stops finds the task that came due.
    started: list[str] = []
    ran = asyncio.Event()

    @app.task("report2", pacing=duetime.Pacing(max_idle=timedelta(hours=1)))
    async def report(payload: dict[str, Any], ctx: duetime.Context) -> None:
        started.append(ctx.task_id)
        if len(started) == 3:
            ran.set()

    claims = ClaimSpy(await app.open())
    async with running(app):
        assert await app.pause("report2") is True
        assert await app.paused() == {"report2"}
        mark = claims.mark("report2")
        await app.schedule_many(duetime.Task("report2", f"r{i}") for i in range(3))
        await claims.since(mark)  # woken by the schedule: the claim finds the type paused
        assert started == [] and (await app.counts("report2"))["due"] == 3
        assert await app.resume("report2") is True
        await asyncio.wait_for(ran.wait(), 25)
        assert await app.paused() == set()
        # Paused while the worker sleeps on its hour: it does not start the task that
        # comes due (its claim finds the type paused).
        await app.pause("report2")
        mark = claims.mark("report2")
        await app.schedule("report2", "later")
        await claims.since(mark)
        assert len(started) == 3 and (await app.counts("report2"))["due"] == 1


async def test_pause_outlives_the_worker_and_the_app(app: duetime.App, store_url: str) -> None:
    @app.task("report3")
    async def report(payload: dict[str, Any]) -> None:
        pass

    await app.pause("report3")
    other = duetime.App(store_url, namespace=app.namespace)
    other.declare("report3")
    try:
        assert await other.paused() == {"report3"}
        assert await other.resume("report3") is True
        assert await app.paused() == set()
    finally:
        await other.close()


async def test_rate_limited_holds_every_start_of_the_type_and_counts_no_attempt(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    starts: list[tuple[str, int]] = []

    @app.task("partner", concurrency=4)
    async def partner(payload: dict[str, Any], ctx: duetime.Context) -> None:
        starts.append((ctx.task_id, ctx.attempt))
        if ctx.task_id == "first" and len(starts) == 1:
            raise duetime.RateLimited(after=timedelta(milliseconds=800))

    async with harness(app, url=store_url) as h:
        await app.schedule("partner", "first")
        await h.run_due()
        assert starts == [("first", 1)]
        await app.schedule_many(duetime.Task("partner", f"p{i}") for i in range(3))
        h.advance(0.799)
        await h.run_due()
        assert starts == [("first", 1)]  # the whole type is held, not only "first"
        h.advance(0.001)
        await h.run_due()
    assert sorted(starts[1:]) == [("first", 1), ("p0", 1), ("p1", 1), ("p2", 1)]


async def test_global_concurrency_holds_across_workers(app: duetime.App) -> None:
    now_running = 0
    most = 0

    @app.task("slots", global_concurrency=3, concurrency=10)
    async def slots(payload: dict[str, Any]) -> None:
        nonlocal now_running, most
        now_running += 1
        most = max(most, now_running)
        await asyncio.sleep(0.1)
        now_running -= 1

    await app.schedule_many(duetime.Task("slots", f"s{i}") for i in range(18))
    async with running(app), running(app):
        await eventually(lambda: _empty(app, "slots"), 10, "every task ran")
    assert most == 3


async def test_a_rate_spaces_a_workers_starts(store_url: str, namespace: str) -> None:
    app = duetime.App(namespace=namespace)
    starts: list[int] = []

    @app.task("paced", rate=duetime.Rate(10, per=timedelta(seconds=1), burst=2), concurrency=50)
    async def paced(payload: dict[str, Any]) -> None:
        starts.append(app.clock.now_ms())

    async with harness(app, url=store_url) as h:
        t0 = epoch_ms(h.now)
        await app.schedule_many(duetime.Task("paced", f"p{i}") for i in range(12))
        await h.run_due()
        assert starts == [t0, t0]  # the burst
        for step in range(1, 11):
            h.advance(0.099)
            await h.run_due()
            assert len(starts) == 1 + step  # not before its 100 ms
            h.advance(0.001)
            await h.run_due()
            assert starts[-1] == t0 + 100 * step and len(starts) == 2 + step


async def test_a_paused_cron_schedule_keeps_its_ticks(store_url: str, namespace: str) -> None:
    app = duetime.App(namespace=namespace)
    ticks: list[str] = []

    @app.cron("* * * * * *", name="everySecond", missed="all")
    async def every(ctx: duetime.Context) -> None:
        ticks.append(ctx.occurrence)

    start = datetime(2031, 3, 1, 12, 0, 0, tzinfo=UTC)
    async with harness(app, url=store_url, start=start) as h:
        h.advance(1)
        await h.run_due()
        assert len(ticks) >= 1
        await app.pause("everySecond")
        seen = len(ticks)
        h.advance(3)
        assert await h.run_due() == [] and len(ticks) == seen
        await app.resume("everySecond")
        await h.run_due()
    ms = sorted(int(t.rpartition("@")[2]) for t in ticks)
    # Every tick of the pause ran once resumed, none lost, none twice.
    assert ms[-1] == epoch_ms(start) + 4_000
    assert all(b - a == 1000 for a, b in zip(ms, ms[1:], strict=False)), ms


# -- partitions --------------------------------------------------------------------------------


async def test_pause_and_global_concurrency_span_every_partition(app: duetime.App) -> None:
    starts: list[str] = []
    now_running = 0
    most = 0

    @app.task("wide", partitions=4, global_concurrency=4, concurrency=16)
    async def wide(payload: dict[str, Any], ctx: duetime.Context) -> None:
        nonlocal now_running, most
        now_running += 1
        most = max(most, now_running)
        starts.append(ctx.task_id)
        await asyncio.sleep(0.05)
        now_running -= 1

    await app.pause("wide")
    assert await app.paused() == {"wide"}
    await app.schedule_many(duetime.Task("wide", f"w{i}") for i in range(40))
    claims = ClaimSpy(await app.open())
    mark = claims.mark("wide")
    async with running(app):
        await claims.since(mark)  # the worker's first claim: it finds every partition paused
        assert starts == []
        await app.resume("wide")
        await eventually(lambda: _empty(app, "wide"), 10, "every task ran")
    assert most <= 4 and sorted(starts) == sorted(f"w{i}" for i in range(40))


async def test_a_hold_a_pause_and_the_limits_span_every_partition(app: duetime.App) -> None:
    app.declare("spread", partitions=4)
    store = await app.open()
    gates = use(store, GATES)
    ids = [f"s{i}" for i in range(12)]
    assert len({partition_of(i, 4) for i in ids}) == 4  # tasks in every partition
    await put(store, *ids, task_type="spread")

    async def take(now: int, limit: int = 100, gate: Gate | None = None) -> ClaimBatch:
        return await store.claim(
            "spread",
            now_ms=now,
            limit=limit,
            lease_ms=LEASE,
            max_stalls=2,
            at_most_once=False,
            gate=gate,
        )

    (first,) = (await take(T0, limit=1)).claims
    assert await store.settle("spread", [Outcome("hold", first, T0 + 2_000)], T0) == [True]
    held = await take(T0 + 1_000)
    assert held.claims == [] and held.open_ms == T0 + 2_000  # every partition is held
    assert await gates.set_paused("spread", True) is True
    assert await gates.paused_types() == ["spread"]
    assert (await take(T0 + 2_000)).claims == []  # every partition is paused
    await gates.set_paused("spread", False)
    # Four running slots over four partitions: one each, so four at most in all.
    limited = await take(T0 + 2_000, gate=Gate(max_running=4))
    assert len(limited.claims) == 4
    assert (await take(T0 + 2_001, gate=Gate(max_running=4))).claims == []
    assert len((await take(T0 + 2_002)).claims) == 8


async def _empty(app: duetime.App, task_type: str) -> bool:
    return (await app.counts(task_type)) == {"due": 0, "running": 0, "dead": 0}


# -- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"rate": "0/s"}, "rate"),
        ({"rate": "100/fortnight"}, "rate"),
        ({"rate": 100}, "rate"),
        ({"rate": duetime.Rate(5, burst=2), "partitions": 4}, "rate"),
        ({"global_concurrency": 0}, "global_concurrency"),
        ({"global_concurrency": True}, "global_concurrency"),
        ({"global_concurrency": 2, "partitions": 4}, "global_concurrency"),
    ],
)
async def test_bad_flow_options_are_refused_at_registration(
    app: duetime.App, options: dict[str, Any], field: str
) -> None:
    with pytest.raises(duetime.ValidationError) as refused:
        app.task("refused", **options)
    assert refused.value.field == field
    assert "refused" not in app.types
    assert await app.paused() == set()


async def test_pause_of_an_unknown_type_is_refused(app: duetime.App) -> None:
    with pytest.raises(duetime.UnknownTaskType):
        await app.pause("nosuchType")
    assert await app.paused() == set()
