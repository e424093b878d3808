"""The store's calls (:class:`.calls.RedisCalls`) on redis-py's cluster client: the one
place redis-py's replies are shaped as duetime's own client's (:mod:`.resp.commands`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from redis.asyncio.cluster import RedisCluster

from duetime.stores.redis.cluster import ClusterScriptRunner
from duetime.stores.redis.server import per_node


class ClusterCalls(ClusterScriptRunner):
    """:class:`.calls.RedisCalls` on a Redis Cluster: each command goes to the primary of
    its keys' slot; a pipeline's commands share that slot (``WAIT`` goes with them). The
    scripts are the runner's own :meth:`run`."""

    async def call(self, *args: Any) -> Any:
        return await self.client.execute_command(*args)

    async def pipeline(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        async with self.client.pipeline(transaction=False) as pipe:
            for command in commands:
                pipe.execute_command(*command)
            replies: list[Any] = await pipe.execute()
        return replies

    async def hgetall(self, key: str) -> dict[bytes, bytes]:
        found: Any = await self.client.hgetall(key)  # replies stay bytes
        return dict(found)

    async def smembers(self, key: str) -> set[bytes]:
        found: Any = await self.client.smembers(key)
        return set(found)

    async def zrange_withscores(self, key: str, start: int, stop: int) -> list[tuple[bytes, float]]:
        rows: Any = await self.client.zrange(key, start, stop, withscores=True)
        return [(member, float(score)) for member, score in rows]

    async def xrevrange(
        self, key: str, high: str, low: str, count: int
    ) -> list[tuple[bytes, dict[bytes, bytes]]]:
        entries: Any = await self.client.xrevrange(key, high, low, count=count)
        return [(entry_id, fields or {}) for entry_id, fields in entries]

    async def scan(self, match: bytes, count: int) -> AsyncIterator[bytes]:
        async for key in self.client.scan_iter(match=match, count=count):
            yield key

    async def info(self, section: str) -> list[dict[str, Any]]:
        infos = per_node(await self.client.info(section, target_nodes=RedisCluster.PRIMARIES))
        return [{k: v if isinstance(v, dict) else str(v) for k, v in i.items()} for i in infos]

    async def time(self) -> tuple[int, int]:
        seconds, micros = await self.client.time()
        return int(seconds), int(micros)

    async def aclose(self) -> None:
        await self.client.aclose()
