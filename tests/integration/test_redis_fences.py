"""Redis-only behaviour of fences: the scripts' guards on the fence key, and a resent write
that went through before the fence moved."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aredis

import duetime
from duetime.features.pollers.dispatch import instruction_task
from duetime.partitions.store import PartitionedStore
from duetime.stores.redis.keys import call_key, type_keys
from duetime.stores.redis.store import RedisStore


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


async def test_a_fence_key_that_is_not_a_number_is_refused_before_anything_is_written(
    store: RedisStore, raw: aredis.Redis, namespace: str
) -> None:
    k = type_keys(namespace, "mail")
    task = instruction_task("a", 1_900_000_000_000)
    await raw.rpush(k.fence, "not a string")
    with pytest.raises(duetime.StoreRefused) as caught:
        await store.raise_fence("mail", 1)
    assert caught.value.key == k.fence
    with pytest.raises(duetime.StoreRefused):
        await store.schedule("mail", [task], only_new=True, fence=1)

    await raw.delete(k.fence)
    await raw.set(k.fence, "twelve")
    for call in (store.raise_fence("mail", 13), store.schedule("mail", [task], fence=13)):
        with pytest.raises(duetime.StoreRefused, match="other than a number"):
            await call
    assert await raw.get(k.fence) == "twelve"
    assert await raw.exists(k.due, k.data) == 0
    # A write under no token does not read the fence.
    await store.schedule("mail", [task])
    assert await raw.exists(k.due, k.data) == 2


async def test_a_resent_fenced_write_that_went_through_is_not_refused_after_the_fence_moved(
    store: RedisStore, namespace: str
) -> None:
    """A write under the current token goes through, but its reply is lost; meanwhile a
    later call raises the fence. The resend finds its own marker and answers as the first
    send did, instead of reporting a refusal for tasks it wrote."""
    k = type_keys(namespace, "mail")
    now = int(await store.time_ms())
    assert await store.raise_fence("mail", 5)
    keys = [k.due, k.data, k.dead, k.meta, k.fence, k.order, k.lane, k.group, k.groups, k.ready]
    keys.append(call_key(k, "f1"))
    task = instruction_task("a", now)
    args = ["ch", "mail", "1", 5, "", "", task.id, task.due_ms, task.record]
    assert await store._run("schedule", keys, args) == [1]
    assert await store.raise_fence("mail", 6)
    await store.cancel("mail", "a")  # it ran and is gone, say

    assert await store._run("schedule", keys, args) == [0]  # the resend: done already
    assert await store.get("mail", "a") is None
    other = [*keys[:10], call_key(k, "f2")]  # a new call under the old token: refused
    with pytest.raises(duetime.LeaseLost):
        await store._run("schedule", other, args)
