"""Fair groups on each store: a type's group limits (``group_concurrency``, ``group_rate``)
hold each group of its tasks on its own, a group at its limit does not hold back the others,
and groups with due work are served in turn; then the same with workers."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

import duetime
from duetime.clock import epoch_ms
from duetime.stores.base import Claim, ClaimBatch, NewTask, Outcome, Store
from duetime.stores.gating import Gate
from duetime.testing import harness
from tests.helpers import eventually, record_text, running

T0 = 1_900_000_000_000
LEASE = 10_000
REC = record_text('{"n":1}')
ONE = Gate(group_running=1)


async def put(store: Store, *tasks: tuple[str, int, str], task_type: str = "mail") -> None:
    """Write tasks given as (id, due offset ms, group)."""
    await store.schedule(task_type, [NewTask(i, T0 + d, REC, 0, g) for i, d, g in tasks])


async def claim(
    store: Store, now: int = T0, limit: int = 100, gate: Gate | None = ONE
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


def done(*claims: Claim) -> list[Outcome]:
    return [Outcome("done", c) for c in claims]


# -- the store's groups, with explicit times ---------------------------------------------------


async def test_a_group_at_its_concurrency_does_not_hold_back_the_others(store: Store) -> None:
    await put(
        store,
        *((f"a{i}", -100 + i, "A") for i in range(5)),
        ("b0", -50, "B"),
        ("b1", -40, "B"),
        ("c0", -30, "C"),
    )
    first = await claim(store)
    assert sorted(ids(first.claims)) == ["a0", "b0", "c0"]  # each group's earliest, once
    held = await claim(store, T0 + 1)
    # Every group with due work is at its limit: nothing to wait for but the leases (the
    # settle that frees a slot wakes the workers).
    assert held.claims == [] and held.open_ms is None and held.next_ms == T0 + LEASE
    by_id = {c.id: c for c in first.claims}
    assert await store.settle("mail", done(by_id["a0"]), T0 + 2) == [True]
    assert ids((await claim(store, T0 + 3)).claims) == ["a1"]
    assert await store.settle("mail", done(by_id["b0"], by_id["c0"]), T0 + 4) == [True, True]
    assert ids((await claim(store, T0 + 5)).claims) == ["b1"]


async def test_groups_are_served_by_their_earliest_due_task(store: Store) -> None:
    await put(store, ("late", -10, "L"), ("early", -90, "E"), ("mid", -50, "M"))
    assert ids((await claim(store, limit=2)).claims) == ["early", "mid"]
    assert ids((await claim(store, limit=2)).claims) == ["late"]


async def test_each_groups_tasks_run_earliest_due_first_and_never_early(store: Store) -> None:
    await put(store, ("x2", -10, "X"), ("x1", -20, "X"), ("x3", 500, "X"))
    gate = Gate(group_running=5)
    assert ids((await claim(store, gate=gate)).claims) == ["x1", "x2"]
    batch = await claim(store, T0 + 1, gate=gate)
    assert batch.claims == [] and batch.next_ms == T0 + 500
    assert ids((await claim(store, T0 + 500, gate=gate)).claims) == ["x3"]


async def test_a_busy_group_gets_no_more_than_its_turn_in_a_claim(store: Store) -> None:
    # A backlog of 300 in one group, a few tasks in two others, all due together: with a
    # group limit far above the claim's, every group still has its share of each claim.
    await put(store, *((f"a{i:03}", -1000, "A") for i in range(300)))
    await put(store, *((f"b{i}", -1000, "B") for i in range(3)))
    await put(store, *((f"c{i}", -1000, "C") for i in range(3)))
    gate = Gate(group_running=1000)
    taken: list[str] = []
    for turn in range(3):
        taken += ids((await claim(store, T0 + turn, limit=10, gate=gate)).claims)
    assert {t for t in taken if t[0] != "a"} == {"b0", "b1", "b2", "c0", "c1", "c2"}
    assert len(taken) == 30


async def test_tasks_without_a_group_are_held_by_no_group_limit(store: Store) -> None:
    await put(store, ("g1", -30, "G"), ("g2", -20, "G"), ("n1", -25, ""), ("n2", -15, ""))
    assert sorted(ids((await claim(store)).claims)) == ["g1", "n1", "n2"]
    got = await store.get("mail", "n1")
    assert got is not None and got.group == ""


async def test_the_type_limits_still_hold_over_the_groups(store: Store) -> None:
    await put(store, *((f"{g}{i}", -10 * i, g.upper()) for g in "abcd" for i in range(2)))
    gate = Gate(max_running=3, group_running=1)
    first = await claim(store, gate=gate)
    assert len(first.claims) == 3
    assert len({c.id[0] for c in first.claims}) == 3  # one of each of three groups
    assert (await claim(store, T0 + 1, gate=gate)).claims == []


async def test_a_group_rate_spaces_each_groups_starts(store: Store) -> None:
    await put(store, *((f"a{i}", -10 + i, "A") for i in range(3)))
    await put(store, *((f"b{i}", -10 + i, "B") for i in range(3)))
    gate = Gate(group_interval_ms=1000.0, group_burst=1.0)
    assert sorted(ids((await claim(store, gate=gate)).claims)) == ["a0", "b0"]
    held = await claim(store, T0 + 10, gate=gate)
    assert held.claims == [] and held.open_ms == T0 + 1000
    assert sorted(ids((await claim(store, T0 + 1000, gate=gate)).claims)) == ["a1", "b1"]


async def test_a_dead_workers_slot_in_its_group_comes_back_after_its_lease(
    store: Store,
) -> None:
    await put(store, ("a0", -20, "A"), ("a1", -10, "A"))
    assert ids((await claim(store)).claims) == ["a0"]
    assert (await claim(store, T0 + 1)).claims == []
    # The worker that ran a0 died: once its lease lapsed, a0 runs again, first.
    assert ids((await claim(store, T0 + LEASE + 1)).claims) == ["a0"]


async def test_the_group_stays_through_a_retry_a_revive_and_a_reschedule(store: Store) -> None:
    await put(store, ("p", -10, "P"), ("q", -5, "P"))
    (first,) = (await claim(store)).claims
    got = await store.get("mail", "p")
    assert got is not None and (got.state, got.group) == ("running", "P")
    retry = Outcome("retry", first, due_ms=T0 + 100, record=REC, error="boom")
    assert await store.settle("mail", [retry], T0 + 1) == [True]
    listed = await store.list_tasks("mail", "due", 10)
    assert sorted((t.id, t.group) for t in listed) == [("p", "P"), ("q", "P")]
    (second,) = (await claim(store, T0 + 2)).claims
    assert second.id == "q"  # p waits for its retry; q is the group's one running task
    dead = Outcome("dead", second, record=REC, error="gone")
    assert await store.settle("mail", [dead], T0 + 3) == [True]
    dead_one = await store.get("mail", "q")
    assert dead_one is not None and (dead_one.state, dead_one.group) == ("dead", "P")
    assert await store.revive("mail", "q", T0 + 4)
    revived = await store.get("mail", "q")
    assert revived is not None and (revived.state, revived.group) == ("due", "P")
    # Scheduled again in another group, it is that group's.
    await put(store, ("q", -1, "Q"))
    moved = await store.get("mail", "q")
    assert moved is not None and moved.group == "Q"


async def test_a_claim_without_group_limits_takes_grouped_tasks_as_any(store: Store) -> None:
    await put(store, ("a0", -30, "A"), ("a1", -20, "A"), ("b0", -10, "B"))
    assert ids((await claim(store, gate=None)).claims) == ["a0", "a1", "b0"]
    # What was taken without limits is not taken again with them.
    assert (await claim(store, T0 + 1)).claims == []


async def test_a_cancelled_task_leaves_its_group(store: Store) -> None:
    await put(store, ("a0", -30, "A"), ("a1", -20, "A"))
    assert await store.cancel("mail", "a0")
    assert ids((await claim(store)).claims) == ["a1"]


# -- with workers ------------------------------------------------------------------------------


async def test_group_concurrency_holds_each_group_and_serves_the_small_ones(
    app: duetime.App,
) -> None:
    now: Counter[str] = Counter()
    most: Counter[str] = Counter()
    starts: list[str] = []

    @app.task("fair", group_concurrency=1, concurrency=10)
    async def fair(payload: dict[str, Any], ctx: duetime.Context) -> None:
        group = payload["g"]
        now[group] += 1
        most[group] = max(most[group], now[group])
        starts.append(ctx.task_id)
        await asyncio.sleep(0.02)
        now[group] -= 1

    tasks = [duetime.Task("fair", f"A{i:02}", payload={"g": "A"}, group="A") for i in range(30)]
    for g in "BC":
        tasks += [duetime.Task("fair", f"{g}{i}", payload={"g": g}, group=g) for i in range(3)]
    await app.schedule_many(tasks)
    info = await app.get("fair", "B1")
    assert info is not None and info.group == "B"
    async with running(app), running(app):
        await eventually(lambda: len(starts) == 36, 20, "every task ran")
    assert max(most.values()) == 1
    tenth_a = [n for n, task_id in enumerate(starts) if task_id[0] == "A"][9]
    small = [n for n, task_id in enumerate(starts) if task_id[0] in "BC"]
    assert max(small) < tenth_a


async def test_a_group_rate_spaces_each_groups_starts_side_by_side(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    starts: list[tuple[str, int]] = []

    @app.task("paced", group_rate=duetime.Rate(5, per=timedelta(seconds=1), burst=1))
    async def paced(payload: dict[str, Any]) -> None:
        starts.append((payload["g"], app.clock.now_ms()))

    async with harness(app, url=store_url) as h:
        t0 = epoch_ms(h.now)
        await app.schedule_many(
            duetime.Task("paced", f"{g}{i}", payload={"g": g}, group=g)
            for g in "XY"
            for i in range(5)
        )
        await h.run_due()
        for step in range(1, 5):
            h.clock.set(t0 + 200 * step - 1)
            await h.run_due()
            assert len(starts) == 2 * step  # never before its 200 ms
            h.clock.set(t0 + 200 * step)
            await h.run_due()
    # 200 ms apart in each group, and the two groups side by side, not one after the other.
    for g in "XY":
        assert [t - t0 for group, t in starts if group == g] == [0, 200, 400, 600, 800]


async def test_group_limits_span_every_partition(app: duetime.App) -> None:
    now: Counter[str] = Counter()
    most: Counter[str] = Counter()
    done_ids: list[str] = []

    @app.task("spread", partitions=2, group_concurrency=2, concurrency=10)
    async def spread(payload: dict[str, Any], ctx: duetime.Context) -> None:
        group = payload["g"]
        now[group] += 1
        most[group] = max(most[group], now[group])
        await asyncio.sleep(0.03)
        now[group] -= 1
        done_ids.append(ctx.task_id)

    await app.schedule_many(
        duetime.Task("spread", f"{g}{i}", payload={"g": g}, group=g)
        for g in "PQ"
        for i in range(12)
    )
    async with running(app), running(app):
        await eventually(lambda: len(done_ids) == 24, 20, "every task ran")
    # Each partition holds one of each group's two slots: never more than two at once.
    assert most["P"] <= 2 and most["Q"] <= 2
    assert sorted(done_ids) == sorted(f"{g}{i}" for g in "PQ" for i in range(12))


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"group_concurrency": 0}, "group_concurrency"),
        ({"group_rate": "0/s"}, "group_rate"),
        ({"group_rate": "100/fortnight"}, "group_rate"),
        ({"group_concurrency": 2, "partitions": 4}, "group_concurrency"),
    ],
)
async def test_bad_group_options_are_refused_at_registration(
    app: duetime.App, options: dict[str, Any], field: str
) -> None:
    with pytest.raises(duetime.ValidationError) as caught:
        app.task("badGroups", **options)(lambda payload: None)
    assert caught.value.field == field


@pytest.mark.parametrize("group", ["", "x" * 201, "a\nb", "tenant@12", 7])
async def test_a_group_that_is_not_a_valid_id_is_refused_and_nothing_is_written(
    app: duetime.App, group: object
) -> None:
    with pytest.raises(duetime.ValidationError) as caught:
        await app.schedule("mail", "g1", group=group)  # type: ignore[call-overload]
    assert caught.value.field == "group"
    with pytest.raises(duetime.ValidationError):
        await app.schedule_many([duetime.Task("mail", "g2", group=group)])  # type: ignore[arg-type]
    assert await app.get("mail", "g1") is None and await app.get("mail", "g2") is None
