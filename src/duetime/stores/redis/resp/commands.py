"""Commands of duetime's own client whose replies want shaping (RESP2 gives flat lists),
and pipelines whose first error reply is raised: the reads of the listings, the cron index
and the gates, given the shapes redis-py's client gives them (:mod:`..calls`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from duetime.stores.redis.resp.client import RespClient
from duetime.stores.redis.resp.errors import ReplyError


async def pipeline(link: RespClient, commands: Sequence[Sequence[Any]]) -> list[Any]:
    """The replies of ``commands``, in one round trip on one connection.

    Raises:
        ReplyError: the first error reply among them.
    """
    replies = await link.call_many(commands)
    if len(commands) == 1:  # the client's send() gives one reply alone
        replies = [replies]
    for reply in replies:
        if isinstance(reply, ReplyError):
            raise reply
    return replies


def pairs(flat: Sequence[Any]) -> dict[Any, Any]:
    """``[field, value, field, value, ...]`` as a dict."""
    return dict(zip(flat[::2], flat[1::2], strict=True))


async def hgetall(link: RespClient, key: str) -> dict[bytes, bytes]:
    return pairs(await link.call("HGETALL", key))


async def smembers(link: RespClient, key: str) -> set[bytes]:
    return set(await link.call("SMEMBERS", key))


async def zrange_withscores(
    link: RespClient, key: str, start: int, stop: int
) -> list[tuple[bytes, float]]:
    flat = await link.call("ZRANGE", key, start, stop, "WITHSCORES")
    return [(member, float(score)) for member, score in zip(flat[::2], flat[1::2], strict=True)]


async def xrevrange(
    link: RespClient, key: str, high: str, low: str, count: int
) -> list[tuple[bytes, dict[bytes, bytes]]]:
    entries = await link.call("XREVRANGE", key, high, low, "COUNT", count)
    return [(entry_id, pairs(fields or ())) for entry_id, fields in entries]


async def scan(link: RespClient, match: bytes, count: int) -> AsyncIterator[bytes]:
    """Every key of the database that matches ``match`` (SCAN's guarantees: a key there
    throughout is met at least once, maybe more)."""
    cursor = b"0"
    while True:
        cursor, keys = await link.call("SCAN", cursor, "MATCH", match, "COUNT", count)
        for key in keys:
            yield key
        if cursor == b"0":
            return


async def time(link: RespClient) -> tuple[int, int]:
    """The server's clock: seconds and microseconds."""
    seconds, micros = await link.call("TIME")
    return int(seconds), int(micros)
