"""A hot type over six partitions on Redis Cluster: its keys sit on every primary, and every
task runs once."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from typing import Any

import pytest

import duetime
from duetime.partitions.layout import part_name
from duetime.stores.redis.keys import type_keys
from tests.helpers import eventually, running
from tests.servers import RedisCluster


@pytest.mark.slow
@pytest.mark.timeout(60)
async def test_six_partitions_spread_a_type_over_every_primary(
    redis_cluster: RedisCluster,
) -> None:
    namespace = "t" + uuid.uuid4().hex[:8]
    app = duetime.App(redis_cluster.cluster_url, namespace=namespace)
    runs: Counter[str] = Counter()

    @app.task("sendEmail", partitions=6, concurrency=50)
    async def send(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs[ctx.task_id] += 1

    tasks = [duetime.Task("sendEmail", f"m{n}", payload={"n": n}) for n in range(2000)]
    try:
        await app.schedule_many(tasks)
        due_keys = [type_keys(namespace, part_name("sendEmail", p)).due for p in range(6)]
        holders = {redis_cluster.primary_for_key(key).id for key in due_keys}
        assert len(holders) == 3  # every primary holds some of the type
        for key in due_keys:  # and each partition's tasks are where its slot says
            node = redis_cluster.primary_for_key(key)
            assert redis_cluster.client(node.port).zcard(key) > 0
        async with running(app):
            await eventually(lambda: sum(runs.values()) >= 2000, 30, "every task ran")
            await asyncio.sleep(0.3)
        assert len(runs) == 2000 and set(runs.values()) == {1}
        assert await app.counts("sendEmail") == {"due": 0, "running": 0, "dead": 0}
    finally:
        await app.close()
