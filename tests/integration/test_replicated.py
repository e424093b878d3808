"""durability='replicated' behind Sentinel and on a cluster: a write returns once a replica
has it, and raises StoreUnavailable when no replica acknowledges it in time."""

from __future__ import annotations

import time
import uuid

import pytest

import duetime
from tests.helpers import eventually, running
from tests.servers import RedisCluster, SentinelGroup


async def _scheduled_and_run(app: duetime.App) -> None:
    done: list[str] = []

    @app.task("mail")
    async def mail(payload: dict[str, object]) -> None:
        done.append(str(payload["to"]))

    await app.schedule("mail", "m1", payload={"to": "a@example.com"})
    async with running(app):
        await eventually(lambda: done == ["a@example.com"])


async def _refused_without_replicas(app: duetime.App) -> float:
    began = time.monotonic()
    with pytest.raises(duetime.StoreUnavailable, match="no replica acknowledged"):
        await app.schedule("mail", "m2", payload={"to": "b@example.com"})
    return time.monotonic() - began


@pytest.mark.slow
@pytest.mark.timeout(60)
async def test_sentinel_writes_wait_for_a_replica(fresh_sentinel_group: SentinelGroup) -> None:
    group = fresh_sentinel_group
    app = duetime.App(
        group.sentinel_url, namespace="t" + uuid.uuid4().hex[:8], durability="replicated"
    )
    try:
        await _scheduled_and_run(app)
        store = await app.open()
        assert any("min-replicas-to-write 0" in w for w in store.durability_warnings())
        primary = group.primary_port()
        for port in group.ports:
            if port != primary:
                group.kill(port)
        took = await _refused_without_replicas(app)
        assert 1.5 < took < 15  # the WAIT's 2 s (and the script runner does not resend)
    finally:
        await app.close()


@pytest.mark.slow
@pytest.mark.timeout(60)
async def test_cluster_writes_wait_for_a_replica(fresh_redis_cluster: RedisCluster) -> None:
    cluster = fresh_redis_cluster
    namespace = "t" + uuid.uuid4().hex[:8]
    app = duetime.App(cluster.cluster_url, namespace=namespace, durability="replicated")
    try:
        await _scheduled_and_run(app)
        store = await app.open()
        # Each primary is checked, and named.
        unsafe = [w for w in store.durability_warnings() if "min-replicas-to-write 0" in w]
        assert len(unsafe) == len(cluster.primaries()), store.durability_warnings()
        primary = cluster.primary_for_key("{" + namespace + ":mail}")
        for replica in cluster.replicas_of(primary.id):
            cluster.kill(replica.port)
        took = await _refused_without_replicas(app)
        assert 1.5 < took < 15
        later = duetime.App(cluster.cluster_url, namespace=namespace, durability="replicated")
        alone = [w for w in (await later.open()).durability_warnings() if "no replica" in w]
        await later.close()
        assert len(alone) == 1 and f":{primary.port} has no replica" in alone[0], alone
        other = duetime.App(cluster.cluster_url, namespace=namespace)  # local durability
        other.declare("mail")
        await other.schedule("mail", "m3", payload={"to": "c@example.com"})  # still accepted
        await other.close()
    finally:
        await app.close()
