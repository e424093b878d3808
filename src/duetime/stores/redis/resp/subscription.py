"""A subscribed connection: each message of its channel handed to a callback as it comes,
and the connection's health watched (a PING after a silence), so that a connection that
died without a word is found and made again by its owner."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from duetime.stores.redis.resp.address import Endpoint
from duetime.stores.redis.resp.connection import Connection, connect, pack
from duetime.stores.redis.resp.errors import ConnectionLost, ReplyError

log = logging.getLogger(__name__)

#: After this long without a byte from the server, a PING; no answer in as long again, and
#: the connection is taken for dead.
HEALTH_SECONDS = 10.0


class Subscriber(Connection):
    """A connection in subscribed mode: messages go to ``on_message`` (their data), the
    rest (subscribe confirmations, PING's answers, errors) to the requests in flight."""

    def __init__(self, on_message: Callable[[bytes], None]) -> None:
        super().__init__()
        self._on_message = on_message
        self.heard = self._loop.time()
        self._ended: asyncio.Future[None] = self._loop.create_future()

    def buffer_updated(self, nbytes: int) -> None:
        self.heard = self._loop.time()
        super().buffer_updated(nbytes)

    def _answer(self, reply: Any) -> None:
        if isinstance(reply, list) and reply and reply[0] in (b"message", b"pmessage"):
            self._deliver(reply[-1])
        else:
            super()._answer(reply)

    def _deliver(self, data: bytes) -> None:
        try:
            self._on_message(data)
        except Exception:  # the callback's bug: the subscription goes on
            log.exception("a message handler failed on %r", data)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if not self._ended.done():
            self._ended.set_result(None)

    async def watch(self) -> None:
        """Return never: raise ConnectionLost once the connection is lost (a PING after
        HEALTH_SECONDS of silence that gets no answer in as long again counts as lost)."""
        while not self._ended.done():
            try:
                async with asyncio.timeout(HEALTH_SECONDS):
                    await asyncio.shield(self._ended)
            except TimeoutError:
                if self._loop.time() - self.heard >= HEALTH_SECONDS:
                    await self._ping()
        raise self._lost or ConnectionLost("the subscribed connection was lost")

    async def _ping(self) -> None:
        try:
            async with asyncio.timeout(HEALTH_SECONDS):
                await self.request(pack(("PING",)))
        except TimeoutError:
            self.abort(ConnectionLost(f"no answer to PING in {HEALTH_SECONDS} s"))
        except ConnectionLost:
            pass  # watch() raises it


async def subscribed(
    endpoint: Endpoint, channel: str, on_message: Callable[[bytes], None]
) -> Subscriber:
    """A connection to ``endpoint`` subscribed to ``channel``, once the server confirmed it.

    Raises:
        ConnectionLost: the connection could not be made, or broke.
        ReplyError: the server refused (the credentials, the channel).
    """
    conn: Subscriber = await connect(endpoint, lambda: Subscriber(on_message))
    try:
        async with asyncio.timeout(endpoint.connect_timeout):
            reply = await conn.request(pack(("SUBSCRIBE", channel)))
    except TimeoutError:
        conn.abort()
        raise ConnectionLost(f"no answer to SUBSCRIBE in {endpoint.connect_timeout} s") from None
    except BaseException:
        conn.abort()
        raise
    if isinstance(reply, ReplyError):
        conn.abort()
        raise reply
    return conn
