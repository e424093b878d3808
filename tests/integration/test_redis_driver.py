"""Every connection duetime opens to Redis names itself to the server as duetime's
(``CLIENT SETINFO``: ``lib-name=redis-py(duetime_v<version>)`` in ``CLIENT LIST`` on Redis
7.2 and later), on one server, a cluster and the sentinels alike; and, given, that name
spares each new connection redis-py's look-up of its own version."""

from __future__ import annotations

import redis

import duetime
from duetime.stores.redis.cluster import connect_cluster
from duetime.stores.redis.connection import connect
from tests.servers import RedisCluster, SentinelGroup

NAME = f"redis-py(duetime_v{duetime.__version__})"


def _named(kwargs: dict[str, object]) -> tuple[object, object]:
    info = kwargs["driver_info"]
    return getattr(info, "formatted_name", None), getattr(info, "lib_version", None)


async def test_a_connection_to_one_server_names_duetime(redis_url: str) -> None:
    client = connect(redis_url)
    try:
        assert await client.ping()
        assert _named(client.connection_pool.connection_kwargs) == (NAME, redis.__version__)
    finally:
        await client.aclose()


async def test_the_connections_to_a_cluster_name_duetime(redis_cluster: RedisCluster) -> None:
    client = connect_cluster(redis_cluster.cluster_url)
    try:
        assert await client.ping()
        assert _named(client.connection_kwargs) == (NAME, redis.__version__)
        for node in client.get_nodes():
            assert _named(node.connection_kwargs) == (NAME, redis.__version__)
    finally:
        await client.aclose()


async def test_the_connections_to_the_sentinels_and_the_primary_name_duetime(
    sentinel_group: SentinelGroup,
) -> None:
    client = connect(sentinel_group.sentinel_url)
    try:
        assert await client.ping()
        pool = client.connection_pool
        assert _named(pool.connection_kwargs) == (NAME, redis.__version__)
        for sentinel in pool.sentinel_manager.sentinels:  # type: ignore[attr-defined]
            assert _named(sentinel.connection_pool.connection_kwargs) == (NAME, redis.__version__)
    finally:
        await client.aclose()
