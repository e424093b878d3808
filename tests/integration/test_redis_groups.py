"""Redis-only behaviour of groups: the keys a type keeps for them (none without groups), the
index made from the due tasks by the first task of a group, stale entries dropped, the
"wait" flag of a claim that found groups full, and no spin over many full groups."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aredis

import duetime
from duetime.partitions.store import PartitionedStore
from duetime.stores.base import ClaimBatch, NewTask, Outcome
from duetime.stores.gating import Gate
from duetime.stores.redis import keys as keys_module
from duetime.stores.redis.keys import TypeKeys, type_keys
from duetime.stores.redis.store import RedisStore
from tests.helpers import record_text

T0 = 1_900_000_000_000
REC = record_text("{}")
LEASE = 10_000
ONE = Gate(group_running=1)


@pytest.fixture
async def raw(redis_url: str) -> AsyncIterator[aredis.Redis]:
    client = aredis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    await client.aclose()


@pytest.fixture
async def store(redis_app: duetime.App) -> RedisStore:
    redis_app.declare("mail")
    store = await redis_app.open()
    assert isinstance(store, PartitionedStore)
    assert isinstance(store.inner, RedisStore)
    return store.inner


async def claim(
    store: RedisStore, now: int = T0, limit: int = 100, gate: Gate | None = ONE
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


def group_keys(k: TypeKeys) -> list[str]:
    return [k.group, k.groups, k.ready, k.pace]


def test_every_key_of_a_type_is_documented() -> None:
    doc = keys_module.__doc__ or ""
    for kind in TypeKeys._fields:
        assert f"duetime:{{ns:type}}:{kind} " in doc, kind


async def test_a_type_without_groups_keeps_no_group_keys(
    store: RedisStore, raw: aredis.Redis, namespace: str
) -> None:
    k = type_keys(namespace, "mail")
    await store.schedule("mail", [NewTask(f"t{i}", T0 - i, REC) for i in range(3)])
    batch = await claim(store)  # group limits, but no task of a group: the plain path
    assert len(batch.claims) == 3
    retry = Outcome("retry", batch.claims[0], due_ms=T0 + 5, record=REC, error="x")
    await store.settle("mail", [retry, *(Outcome("done", c) for c in batch.claims[1:])], T0)
    assert await store.cancel("mail", retry.claim.id)
    assert await raw.exists(*group_keys(k)) == 0


async def test_the_first_task_of_a_group_puts_the_due_tasks_before_it_in_no_group(
    store: RedisStore, raw: aredis.Redis, namespace: str
) -> None:
    k = type_keys(namespace, "mail")
    await store.schedule("mail", [NewTask("a", T0 - 30, REC), NewTask("b", T0 - 20, REC)])
    await store.schedule("mail", [NewTask("g1", T0 - 10, REC, 0, "G")])
    await store.schedule("mail", [NewTask("g2", T0 - 5, REC, 0, "G")])
    assert await raw.zcard(k.groups) == 4
    assert await raw.hgetall(k.group) == {"g1": "G", "g2": "G"}
    batch = await claim(store)
    assert sorted(c.id for c in batch.claims) == ["a", "b", "g1"]


async def test_entries_of_tasks_taken_without_group_limits_are_dropped_when_met(
    store: RedisStore, raw: aredis.Redis, namespace: str
) -> None:
    k = type_keys(namespace, "mail")
    await store.schedule("mail", [NewTask(f"a{i}", T0 - i, REC, 0, "A") for i in range(5)])
    assert len((await claim(store, gate=None)).claims) == 5
    assert await raw.zcard(k.groups) == 5  # stale now
    assert (await claim(store, T0 + 1)).claims == []
    assert await raw.exists(k.groups, k.ready) == 0  # dropped, and the group left the line


async def test_a_claim_that_finds_its_groups_full_sets_wait_and_a_settle_clears_it(
    store: RedisStore, raw: aredis.Redis, namespace: str
) -> None:
    k = type_keys(namespace, "mail")
    await store.schedule("mail", [NewTask(f"a{i}", T0 - 10 + i, REC, 0, "A") for i in range(3)])
    (first,) = (await claim(store)).claims
    held = await claim(store, T0 + 1)
    assert held.claims == [] and held.next_ms == T0 + LEASE and held.open_ms is None
    assert await raw.hget(k.gate, "wait") == "1"
    assert await store.settle("mail", [Outcome("done", first)], T0 + 2) == [True]
    assert await raw.hget(k.gate, "wait") is None
    assert await raw.zrangebylex(k.groups, "[r|", "[r|\xff") == []  # the run's entry went
    assert [c.id for c in (await claim(store, T0 + 3)).claims] == ["a1"]


async def test_a_claim_over_more_full_groups_than_it_visits_does_not_spin(
    store: RedisStore,
) -> None:
    # 40 groups of 2 tasks at a group concurrency of 1: a claim of 100 takes one of each;
    # then a claim of 1 visits 17 groups, all full, and waits for a lease or a settle.
    tasks = [
        NewTask(f"{g}-{i}", T0 - 100 + i, REC, 0, f"g{g:02}") for g in range(40) for i in (0, 1)
    ]
    await store.schedule("mail", tasks)
    assert len((await claim(store)).claims) == 40
    held = await claim(store, T0 + 1, limit=1)
    assert held.claims == [] and held.next_ms == T0 + LEASE and held.open_ms is None


async def test_a_group_rate_time_is_kept_while_it_is_ahead(
    store: RedisStore, raw: aredis.Redis, namespace: str
) -> None:
    k = type_keys(namespace, "mail")
    gate = Gate(group_interval_ms=100.0, group_burst=1.0)
    await store.schedule("mail", [NewTask(f"a{i}", T0 - 10, REC, 0, "A") for i in range(2)])
    assert len((await claim(store, gate=gate)).claims) == 1
    assert float(await raw.zscore(k.pace, "A") or 0) == T0 + 100
    assert len((await claim(store, T0 + 100, gate=gate)).claims) == 1
    await store.schedule("mail", [NewTask("b0", T0 + 1000, REC, 0, "B")])
    assert len((await claim(store, T0 + 1000, gate=gate)).claims) == 1
    # A's time is past (as good as none): the next grouped claim dropped it.
    assert await raw.zrange(k.pace, 0, -1) == ["B"]
