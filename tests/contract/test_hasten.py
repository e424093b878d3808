"""Store.hasten and Store.active_ids, the two store calls pollers rely on: a waiting task
brought forward (never one that runs), and the ids of what waits or runs."""

from __future__ import annotations

import asyncio

from duetime.stores.base import NewTask, Outcome, Store
from tests.contract.test_claims import REC, T0, claim, put
from tests.helpers import eventually, record_text


async def test_hasten_moves_a_waiting_task_forward_and_never_back(store: Store) -> None:
    other = record_text('{"n":2}')
    await store.schedule("mail", [NewTask("a", T0 + 60_000, other)])

    assert await store.hasten("mail", "a", T0) is True
    got = await store.get("mail", "a")
    assert got is not None and (got.state, got.due_ms, got.record) == ("due", T0, other)
    assert await store.hasten("mail", "a", T0 + 5) is False  # due by then already
    assert await store.hasten("mail", "a", T0) is False  # twice: the same result
    got = await store.get("mail", "a")
    assert got is not None and got.due_ms == T0
    assert [c.id for c in await claim(store, now=T0)] == ["a"]


async def test_hasten_leaves_what_does_not_wait(store: Store) -> None:
    await put(store, ("running", T0), ("dead", T0), ("again", T0))
    claims = {c.id: c for c in await claim(store)}
    dead = claims["dead"]
    outcome = Outcome("dead", dead, None, dead.record, "given up")
    assert await store.settle("mail", [outcome], T0) == [True]
    # Rescheduled while it runs: it waits and holds a lease at once.
    await store.schedule("mail", [NewTask("again", T0 + 60_000, REC)])

    for task_id in ("running", "dead", "again", "missing"):
        assert await store.hasten("mail", task_id, T0 - 1000) is None, task_id
    assert await store.hasten("never-used-type", "x", T0) is None
    again = await store.get("mail", "again")
    assert again is not None and again.due_ms == T0 + 60_000
    assert await claim(store, now=T0 + 1) == []  # nothing claimable was made


async def test_hasten_wakes_workers_when_the_task_becomes_the_earliest(store: Store) -> None:
    await put(store, ("first", T0 + 10_000), ("second", T0 + 20_000))
    await claim(store, limit=0)  # a type this process runs (Redis Cluster wakes by type)
    woken: list[tuple[str, int]] = []
    listening = asyncio.create_task(store.listen(lambda t, due: woken.append((t, due))))
    try:
        # Every store says ("*", 0) once it listens (on Redis, once subscribed), which can
        # take longer than a fixed sleep on a loaded machine (a Sentinel names the primary
        # first): a wake-up published before it is lost.
        await eventually(lambda: ("*", 0) in woken, within=10, what="the listener is up")
        assert await store.hasten("mail", "second", T0 + 15_000) is True  # not the earliest
        assert await store.hasten("mail", "second", T0 + 5_000) is True
        await eventually(lambda: ("mail", T0 + 5_000) in woken, within=25, what="the wake-up")
        assert ("mail", T0 + 15_000) not in woken
    finally:
        listening.cancel()
        await asyncio.gather(listening, return_exceptions=True)


async def test_active_ids_are_the_running_then_the_waiting_tasks(store: Store) -> None:
    await put(store, ("r1", T0 - 2), ("r2", T0 - 1), ("dead", T0 - 3))
    claims = {c.id: c for c in await claim(store, limit=3)}
    dead = claims["dead"]
    await store.settle("mail", [Outcome("dead", dead, None, dead.record, "x")], T0)
    await put(store, ("w2", T0 + 2000), ("w1", T0 + 1000), ("r1", T0 + 5000))  # r1 again

    assert await store.active_ids("mail", 100) == ["r1", "r2", "w1", "w2"]
    assert await store.active_ids("mail", 3) == ["r1", "r2", "w1"]
    assert await store.active_ids("mail", 1) == ["r1"]
    assert await store.active_ids("nothing-here", 10) == []
