"""The one interface the Redis store calls through, whatever the topology.

On one server and behind Sentinel it is :class:`ServerCalls`, on duetime's own client
(:mod:`.resp`); on a Cluster, :class:`.clustercalls.ClusterCalls`, on redis-py's cluster
client, which is loaded for nothing else. Both give the same answers to the same calls
(``tests/integration/test_calls_conformance.py``): bytes as stored, numbers as numbers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any, Protocol

from duetime.stores.redis import scripts
from duetime.stores.redis.resp import commands as resp
from duetime.stores.redis.server import parse_info


class RedisCalls(Protocol):
    """The calls of the store. Each command's keys share one slot (one task type's, or the
    namespace's); the clients' own exceptions pass (``.connection.errors`` maps them)."""

    async def run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """A script's reply (:meth:`.scripts.ScriptRunner.run`)."""

    async def call(self, *args: Any) -> Any:
        """One command's reply, for commands answered with a number, bytes, None or a list
        of those (HGET, HMGET, ZCARD...); an error reply is raised."""

    async def pipeline(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        """Replies of ``commands`` (as :meth:`call` takes them, and ``WAIT``), sent in one
        round trip on one connection; the first error reply is raised."""

    async def hgetall(self, key: str) -> dict[bytes, bytes]: ...

    async def smembers(self, key: str) -> set[bytes]: ...

    async def zrange_withscores(
        self, key: str, start: int, stop: int
    ) -> list[tuple[bytes, float]]: ...

    async def xrevrange(
        self, key: str, high: str, low: str, count: int
    ) -> list[tuple[bytes, dict[bytes, bytes]]]: ...

    def scan(self, match: bytes, count: int) -> AsyncIterator[bytes]:
        """The keys that match, on every primary."""

    async def info(self, section: str) -> list[dict[str, Any]]:
        """INFO ``section``, one dict per primary; values as text but nested sections."""

    async def time(self) -> tuple[int, int]:
        """The server's clock (the first primary's on a Cluster): seconds, microseconds."""

    async def aclose(self) -> None: ...


class ServerCalls(scripts.ScriptRunner):
    """:class:`RedisCalls` on duetime's own client: one server, or behind Sentinel. The
    scripts are the runner's own :meth:`run` (no call between: it is a worker's path)."""

    async def call(self, *args: Any) -> Any:
        return await self.link.call(*args)

    async def pipeline(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        return await resp.pipeline(self.link, commands)

    async def hgetall(self, key: str) -> dict[bytes, bytes]:
        return await resp.hgetall(self.link, key)

    async def smembers(self, key: str) -> set[bytes]:
        return await resp.smembers(self.link, key)

    async def zrange_withscores(self, key: str, start: int, stop: int) -> list[tuple[bytes, float]]:
        return await resp.zrange_withscores(self.link, key, start, stop)

    async def xrevrange(
        self, key: str, high: str, low: str, count: int
    ) -> list[tuple[bytes, dict[bytes, bytes]]]:
        return await resp.xrevrange(self.link, key, high, low, count)

    def scan(self, match: bytes, count: int) -> AsyncIterator[bytes]:
        return resp.scan(self.link, match, count)

    async def info(self, section: str) -> list[dict[str, Any]]:
        return [parse_info(await self.link.call("INFO", section))]

    async def time(self) -> tuple[int, int]:
        return await resp.time(self.link)

    async def aclose(self) -> None:
        await self.link.aclose()
