"""Redis-only behaviour of a type's gates: a gate key exists only while something is set
(so an ungated type's claim reads one missing key), and the scripts refuse a gate key of
another type before they write."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aredis

import duetime
from duetime.partitions.store import PartitionedStore
from duetime.stores.base import NewTask, Outcome
from duetime.stores.gating import Gate
from duetime.stores.redis.keys import paused_index, type_keys
from duetime.stores.redis.store import RedisStore
from tests.helpers import record_text

T0 = 1_900_000_000_000
REC = record_text("{}")
CLAIM = {"lease_ms": 10_000, "max_stalls": 2, "at_most_once": False}


@pytest.fixture
async def raw(redis_url: str) -> AsyncIterator[aredis.Redis]:
    client = aredis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    await client.aclose()


@pytest.fixture
async def store(redis_app: duetime.App) -> RedisStore:
    redis_app.declare("mail")
    store = await redis_app.open()
    assert isinstance(store, PartitionedStore) and isinstance(store.inner, RedisStore)
    return store.inner


async def test_the_gate_key_is_gone_once_nothing_is_set(
    store: RedisStore, raw: aredis.Redis, namespace: str
) -> None:
    gate = type_keys(namespace, "mail").gate
    await store.schedule("mail", [NewTask("a", T0, REC), NewTask("b", T0, REC)])
    await store.set_paused("mail", True)
    assert await raw.hgetall(gate) == {"paused": "1"}
    assert await raw.smembers(paused_index(namespace)) == {"mail"}
    await store.set_paused("mail", False)
    assert not await raw.exists(gate) and not await raw.exists(paused_index(namespace))

    (c,) = (await store.claim("mail", now_ms=T0, limit=1, **CLAIM)).claims  # type: ignore[arg-type]
    await store.settle("mail", [Outcome("hold", c, T0 + 1_000)], T0)
    assert await raw.hgetall(gate) == {"hold": str(T0 + 1_000)}
    later = await store.claim("mail", now_ms=T0 + 1_000, limit=5, **CLAIM)  # type: ignore[arg-type]
    assert len(later.claims) == 2 and not await raw.exists(gate)  # the hold is over: gone


async def test_a_gate_key_of_another_type_is_refused_before_anything_is_written(
    store: RedisStore, raw: aredis.Redis, namespace: str
) -> None:
    gate = type_keys(namespace, "mail").gate
    await store.schedule("mail", [NewTask("a", T0, REC)])
    await raw.set(gate, "not a hash")
    for call in (
        store.claim("mail", now_ms=T0, limit=5, gate=Gate(max_running=1), **CLAIM),  # type: ignore[arg-type]
        store.set_paused("mail", True),
        store.hold("mail", T0),
    ):
        with pytest.raises(duetime.StoreRefused):
            await call
    assert (await store.count("mail"))["due"] == 1
    assert await raw.get(gate) == "not a hash"
    assert await store.paused_types() == []  # read, not refused
