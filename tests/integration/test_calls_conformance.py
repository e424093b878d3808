"""The Redis store's one interface (:class:`duetime.stores.redis.calls.RedisCalls`) gives the
same answers on duetime's own client (one server) and on redis-py's cluster client (a
real Redis Cluster): the same calls, on the same data, compared answer by answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from duetime.errors import StoreError
from duetime.stores.redis.calls import RedisCalls
from duetime.stores.redis.clustercalls import ClusterCalls
from duetime.stores.redis.config import RedisConfig, errors
from duetime.stores.redis.store import RedisStore
from tests.servers import RedisCluster, RedisServer

#: Keys of one slot, as the store's are (one hash tag).
TAG = "{conformance}"
HASH, SET, ZSET, STREAM = (f"duetime:{TAG}:{kind}" for kind in ("h", "s", "z", "x"))


@pytest.fixture
async def both(
    redis_server: RedisServer, redis_cluster: RedisCluster, namespace: str
) -> AsyncIterator[tuple[RedisCalls, RedisCalls]]:
    stores = [
        RedisStore(RedisConfig(redis_server.url, namespace)),
        RedisStore(RedisConfig(redis_cluster.cluster_url, namespace)),
    ]
    for store in stores:
        await store.open()
    one, cluster = (store.calls for store in stores)
    assert not isinstance(one, ClusterCalls) and isinstance(cluster, ClusterCalls)
    try:
        for calls in (one, cluster):
            await calls.pipeline([("DEL", HASH, SET, ZSET, STREAM)])
            await _fill(calls)
        yield one, cluster
    finally:
        for calls in (one, cluster):
            await calls.pipeline([("DEL", HASH, SET, ZSET, STREAM)])
        for store in stores:
            await store.close()


async def _fill(calls: RedisCalls) -> None:
    await calls.pipeline(
        [
            ("HSET", HASH, "a", "1", b"b\xff", b"\x00bytes\xfe", "c", ""),
            ("SADD", SET, "x", "y", b"z\xff"),
            ("ZADD", ZSET, "1.5", "m1", "2", b"m\xff", "1700000000000.25", "m3"),
            ("XADD", STREAM, "1-1", "f", "1"),
            ("XADD", STREAM, "2-1", "f", "2", "g", b"\xff"),
            ("XADD", STREAM, "3-1", "f", "3"),
        ]
    )


async def _answers(calls: RedisCalls) -> list[Any]:
    scanned = sorted([key async for key in calls.scan(f"duetime:{TAG}:*".encode(), 2)])
    return [
        await calls.hgetall(HASH),
        await calls.hgetall(HASH + ":none"),
        await calls.smembers(SET),
        await calls.smembers(SET + ":none"),
        await calls.zrange_withscores(ZSET, 0, -1),
        await calls.zrange_withscores(ZSET, 1, 1),
        await calls.zrange_withscores(ZSET + ":none", 0, 10),
        await calls.xrevrange(STREAM, "+", "-", 2),
        await calls.xrevrange(STREAM, "(2-1", "-", 10),
        await calls.call("HGET", HASH, "a"),
        await calls.call("HGET", HASH, "none"),
        await calls.call("HMGET", HASH, "a", b"b\xff", "none"),
        await calls.call("ZCARD", ZSET),
        await calls.pipeline([("HSETNX", HASH, "a", "2"), ("HGET", HASH, "a")]),
        await calls.pipeline([("SREM", SET, "none")]),
        await calls.run("active_ids", [ZSET + ":due", ZSET + ":running"], [10]),
        scanned,
    ]


async def test_the_same_calls_give_the_same_answers_on_one_server_and_on_a_cluster(
    both: tuple[RedisCalls, RedisCalls],
) -> None:
    one, cluster = both
    expected = await _answers(one)
    assert expected[0] == {b"a": b"1", b"b\xff": b"\x00bytes\xfe", b"c": b""}
    assert expected[4] == [(b"m1", 1.5), (b"m\xff", 2.0), (b"m3", 1700000000000.25)]
    assert expected[7] == [(b"3-1", {b"f": b"3"}), (b"2-1", {b"f": b"2", b"g": b"\xff"})]
    assert expected[-1] == [f"duetime:{TAG}:{kind}".encode() for kind in "hsxz"]
    assert await _answers(cluster) == expected


async def test_clock_and_info_have_the_same_shape(both: tuple[RedisCalls, RedisCalls]) -> None:
    for calls in both:
        seconds, micros = await calls.time()
        assert isinstance(seconds, int) and isinstance(micros, int) and seconds > 1_700_000_000
        infos = await calls.info("memory")
        assert infos and all(info["maxmemory_policy"] == "noeviction" for info in infos)


async def test_an_error_reply_is_raised_on_both_and_mapped_alike(
    both: tuple[RedisCalls, RedisCalls],
) -> None:
    for calls in both:
        with pytest.raises(StoreError, match="WRONGTYPE"):
            async with errors("read"):
                await calls.call("HGET", ZSET, "m1")
        with pytest.raises(StoreError, match="WRONGTYPE"):
            async with errors("read"):
                await calls.pipeline([("HGET", HASH, "a"), ("HGET", ZSET, "m1")])
        with pytest.raises(StoreError, match="WRONGTYPE"):
            async with errors("read"):
                await calls.smembers(ZSET)
