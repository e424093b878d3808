"""Key expiry handlers on Redis Cluster: keys expiring on every primary, each handled once,
with workers listening on all of them."""

from __future__ import annotations

import asyncio
import uuid

import pytest
import redis.cluster

import duetime
from tests.helpers import eventually, running
from tests.servers import RedisCluster


@pytest.mark.slow
@pytest.mark.timeout(60)
async def test_keys_expiring_on_every_primary_are_handled_once(
    redis_cluster: RedisCluster,
) -> None:
    namespace = "t" + uuid.uuid4().hex[:8]
    seen: list[str] = []
    apps = [duetime.App(redis_cluster.cluster_url, namespace=namespace) for _ in range(2)]
    for app in apps:

        @app.on_key_expired(f"{namespace}:session:*", name="sessionEnded")
        async def session_ended(key: str) -> None:
            seen.append(key)

    keys = [f"{namespace}:session:{i}" for i in range(30)]
    primaries = {redis_cluster.primary_for_key(key).id for key in keys}
    assert len(primaries) == 3  # the keys spread over every primary
    startup = [
        redis.cluster.ClusterNode(host, port)  # type: ignore[no-untyped-call]
        for host, port in redis_cluster.startup_nodes
    ]
    raw = redis.cluster.RedisCluster(startup_nodes=startup)
    try:
        async with running(apps[0]), running(apps[1]):
            await asyncio.sleep(0.3)  # every worker listens on every primary
            for key in keys:
                raw.set(key, "x", px=100)
            await eventually(lambda: len(seen) >= len(keys), 10, "every key handled")
            await asyncio.sleep(0.5)  # and none twice
    finally:
        raw.close()
        for app in apps:
            await app.close()
    assert sorted(seen) == sorted(keys)
    with pytest.raises(duetime.ConfigError, match="database 0 only"):
        apps[0].on_key_expired("x:*", db=3)
