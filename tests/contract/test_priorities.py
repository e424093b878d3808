"""Priorities on each store: among a type's due tasks, higher priority is claimed first,
equal priorities earliest due first, and no task before its due time."""

from __future__ import annotations

from datetime import timedelta

import pytest

import duetime
from duetime.stores.base import Claim, ClaimBatch, NewTask, Outcome, Store
from tests.helpers import record_text

T0 = 1_900_000_000_000
LEASE = 10_000
REC = record_text('{"n":1}')


async def put(store: Store, *tasks: tuple[str, int, int], task_type: str = "mail") -> None:
    """Write tasks given as (id, due offset ms, priority)."""
    await store.schedule(task_type, [NewTask(i, T0 + d, REC, p) for i, d, p in tasks])


async def claim(store: Store, now: int = T0, limit: int = 100) -> ClaimBatch:
    return await store.claim(
        "mail", now_ms=now, limit=limit, lease_ms=LEASE, max_stalls=2, at_most_once=False
    )


def ids(claims: list[Claim]) -> list[str]:
    return [c.id for c in claims]


async def test_higher_priority_is_claimed_first_then_earliest_due(store: Store) -> None:
    await put(
        store,
        ("zero-late", -10, 0),
        ("zero-early", -30, 0),
        ("high-late", -5, 7),
        ("high-early", -20, 7),
        ("top", -1, 100),
        ("low", -50, -3),
        ("lowest", -60, -100),
        ("future-top", 1_000, 100),  # not due: never before its time
    )
    batch = await claim(store)
    assert ids(batch.claims) == [
        "top",
        "high-early",
        "high-late",
        "zero-early",
        "zero-late",
        "low",
        "lowest",
    ]
    assert batch.next_ms == T0 + 1_000  # the future task is the next due time


async def test_a_claim_limit_takes_the_highest_levels(store: Store) -> None:
    await put(store, ("a", -3, 0), ("b", -2, 1), ("c", -1, 2), ("d", -4, -1))
    assert ids((await claim(store, limit=2)).claims) == ["c", "b"]
    assert ids((await claim(store, limit=1)).claims) == ["a"]
    assert ids((await claim(store, limit=5)).claims) == ["d"]


async def test_a_type_without_priorities_is_claimed_earliest_first(store: Store) -> None:
    await put(store, ("b", -1, 0), ("a", -2, 0), ("c", 5, 0))
    listed = await store.list_tasks("mail", "due", 10)
    assert [(t.id, t.priority) for t in listed] == [("a", 0), ("b", 0), ("c", 0)]
    got = await store.get("mail", "a")
    assert got is not None and got.priority == 0 and type(got.priority) is int
    assert ids((await claim(store)).claims) == ["a", "b"]


async def test_the_priority_stays_through_a_retry_and_a_revive(store: Store) -> None:
    await put(store, ("p", -10, 9), ("q", -20, 0))
    (first, second) = (await claim(store)).claims
    assert first.id == "p"
    got = await store.get("mail", "p")
    assert got is not None and (got.state, got.priority) == ("running", 9)
    # a retry and a dead letter keep their priority
    kept = await store.settle(
        "mail",
        [
            Outcome("retry", first, T0, REC, "boom"),
            Outcome("dead", second, None, REC, "gone"),
        ],
        T0,
    )
    assert kept == [True, True]
    await put(store, ("r", -30, 0))
    assert ids((await claim(store, limit=1)).claims) == ["p"]
    dead = await store.list_tasks("mail", "dead", 10)
    assert [(t.id, t.priority) for t in dead] == [("q", 0)]
    due = await store.list_tasks("mail", "due", 10)
    assert [(t.id, t.priority) for t in due] == [("r", 0)]
    running = await store.list_tasks("mail", "running", 10)
    assert [(t.id, t.priority) for t in running] == [("p", 9)]


async def test_scheduling_again_sets_the_new_priority(store: Store) -> None:
    await put(store, ("a", -10, 50), ("b", -5, 0))
    await put(store, ("a", -10, -50))
    got = await store.get("mail", "a")
    assert got is not None and got.priority == -50
    assert ids((await claim(store)).claims) == ["b", "a"]


# -- through the app -------------------------------------------------------------------------


async def test_the_app_schedules_with_priorities_and_type_defaults(app: duetime.App) -> None:
    @app.task("mail")
    async def mail(payload: dict[str, object]) -> None: ...

    @app.task("urgent", priority=20)
    async def urgent(payload: dict[str, object]) -> None: ...

    await app.schedule("mail", "m1", priority=5)
    await app.schedule("urgent", "u1")
    await app.schedule("urgent", "u2", priority=-1)
    await app.schedule_many([duetime.Task("mail", "m2", priority=-7), duetime.Task("urgent", "u3")])
    shown = {
        (t.task_type, t.task_id): t.priority
        for name in ("mail", "urgent")
        for t in await app.list(name, "due")
    }
    assert shown == {
        ("mail", "m1"): 5,
        ("mail", "m2"): -7,
        ("urgent", "u1"): 20,
        ("urgent", "u2"): -1,
        ("urgent", "u3"): 20,
    }
    info = await app.get("mail", "m1")
    assert info is not None and info.priority == 5


@pytest.mark.parametrize("bad", [101, -101, "5", 2.0, True])
async def test_a_bad_priority_is_refused_and_nothing_is_written(
    app: duetime.App, bad: object
) -> None:
    @app.task("mail")
    async def mail(payload: dict[str, object]) -> None: ...

    with pytest.raises(duetime.ValidationError) as caught:
        await app.schedule("mail", "m1", priority=bad)  # type: ignore[call-overload]
    assert caught.value.field == "priority"
    with pytest.raises(duetime.ValidationError) as many:
        await app.schedule_many(
            [duetime.Task("mail", "ok"), duetime.Task("mail", "m2", priority=bad)]  # type: ignore[arg-type]
        )
    assert many.value.field == "tasks[1].priority"
    with pytest.raises(duetime.ValidationError) as typed:
        app.task("other", priority=bad)  # type: ignore[arg-type]
    assert typed.value.field == "priority"
    assert await app.get("mail", "m1") is None and await app.get("mail", "ok") is None


async def test_keep_leaves_the_pending_priority(app: duetime.App) -> None:
    @app.task("mail")
    async def mail(payload: dict[str, object]) -> None: ...

    await app.schedule("mail", "m1", priority=9, delay=timedelta(hours=1))
    await app.schedule("mail", "m1", priority=1, if_exists="keep")
    info = await app.get("mail", "m1")
    assert info is not None and info.priority == 9
    await app.schedule("mail", "m1", priority=-2, if_exists="replace", unique_for=60)
    info = await app.get("mail", "m1")
    assert info is not None and info.priority == -2


async def test_a_type_that_gets_priorities_late_keeps_its_earlier_tasks(store: Store) -> None:
    # A backlog of priority 0 first (claimed as a type without priorities would be)...
    await put(store, *((f"old{i}", -100 + i, 0) for i in range(5)))
    assert ids((await claim(store, limit=1)).claims) == ["old0"]
    # ... then a task of another priority: it goes first, and the backlog still follows.
    await put(store, ("new", -1, 3), ("low", -200, -3))
    assert ids((await claim(store, limit=2)).claims) == ["new", "old1"]
    assert ids((await claim(store)).claims) == ["old2", "old3", "old4", "low"]


async def test_a_reaped_hastened_or_revived_task_keeps_its_priority(store: Store) -> None:
    await put(store, ("p", -10, 7), ("later", 60_000, 9), ("z", -20, 0))
    (first,) = (await claim(store, limit=1)).claims
    assert first.id == "p"
    # its lease expires: reaped back to due, still first
    reaped = await claim(store, now=T0 + LEASE + 1, limit=1)
    assert ids(reaped.claims) == ["p"] and reaped.reaped == 1
    assert await store.hasten("mail", "later", T0 - 5) is True
    assert ids((await claim(store, now=T0 + LEASE + 2, limit=1)).claims) == ["later"]
    (z,) = (await claim(store, now=T0 + LEASE + 3, limit=1)).claims
    assert await store.settle("mail", [Outcome("dead", z, None, REC, "gone")], T0) == [True]
    assert await store.revive("mail", "z", T0) is True
    got = await store.get("mail", "z")
    assert got is not None and (got.state, got.priority) == ("due", 0)


async def test_a_cancelled_task_is_not_claimed_and_its_priority_goes(store: Store) -> None:
    await put(store, ("a", -10, 5), ("b", -5, 5), ("c", -1, 0))
    assert await store.cancel("mail", "a") is True
    assert ids((await claim(store)).claims) == ["b", "c"]
    await put(store, ("a", -1, 0))  # the id again, of priority 0
    got = await store.get("mail", "a")
    assert got is not None and got.priority == 0


async def test_expiring_entries_of_a_type_with_priorities_are_claimed(store: Store) -> None:
    from duetime.stores.capabilities import ENTRIES, has, use

    if not has(store, ENTRIES):
        return
    await put(store, ("p", -10, 5))
    await use(store, ENTRIES).put_entry(
        "mail", [NewTask("e", T0 - 5, REC)], keep_ttl=False, now_ms=T0 - 100
    )
    assert ids((await claim(store)).claims) == ["p", "e"]
