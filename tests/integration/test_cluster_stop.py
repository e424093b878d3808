"""A worker on Redis Cluster stops as soon as its work is done: its shard channels'
listener ends at the first cancellation (redis-py's timed read of a shard channel can
swallow one on Python 3.11, which kept every stop waiting for the next half-second poll);
and its wake-up listener outlives asyncio's RuntimeError of a write to a closed transport
(the single server's is tests/integration/test_resp_client.py's)."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from redis.asyncio.cluster import RedisCluster as RedisClusterClient

import duetime
from duetime.stores.redis.cluster import listen_sharded
from duetime.testing import harness
from tests.helpers import eventually
from tests.servers import RedisCluster


async def test_a_burst_on_a_cluster_returns_once_its_runs_are_settled(
    redis_cluster: RedisCluster,
) -> None:
    app = duetime.App(namespace="t" + uuid.uuid4().hex[:8])
    ran: list[str] = []

    @app.task("remind")
    async def remind(payload: dict[str, Any], ctx: duetime.Context) -> None:
        ran.append(ctx.task_id)

    took = []
    async with harness(app, url=redis_cluster.cluster_url) as h:
        await app.schedule("remind", "r", delay=timedelta(minutes=2))
        for _ in range(4):  # a burst worker each time: it subscribes, runs what is due, stops
            h.advance(timedelta(minutes=1))
            began = time.monotonic()
            await h.run_due()
            took.append(time.monotonic() - began)

    assert ran == ["r"]
    # Each stop waited out a whole poll (0.5 s) before; now a burst takes a few
    # milliseconds, well under the poll even on a loaded machine.
    assert max(took) < 0.4, took


async def test_the_shard_listener_survives_a_write_to_a_dead_nodes_transport(
    redis_cluster: RedisCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node that dies under redis-py's cluster pub/sub can leave it writing to a closed
    transport, which asyncio raises as a RuntimeError: the listener subscribes again, as
    for a lost connection, instead of ending the worker."""
    client = RedisClusterClient.from_url(redis_cluster.seed_url)
    await client.initialize()
    real_pubsub = client.pubsub
    broken = [True]

    def pubsub() -> Any:
        made = real_pubsub()
        if broken.pop() if broken else False:

            async def dead(**_: Any) -> Any:
                raise RuntimeError("unable to perform operation on <TCPTransport closed=True>")

            made.get_sharded_message = dead  # type: ignore[assignment]
        return made

    monkeypatch.setattr(client, "pubsub", pubsub)
    wakes: list[str] = []
    more = asyncio.Event()
    namespace = "t" + uuid.uuid4().hex[:8]
    listener = asyncio.create_task(
        listen_sharded(client, namespace, {"work"}, more, lambda t, d: wakes.append(t))
    )
    try:
        await eventually(lambda: wakes.count("*") >= 2, 10, "subscribed again after the error")
        assert not listener.done()
    finally:
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)
        await client.aclose()
