"""Calls on a Redis server through duetime's own connections: one call in flight on each,
the idle ones kept for the next call, and a call that meets a lost connection (or a server
still loading its data, or a demoted primary behind Sentinel) sent again on a new one."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

from duetime.backoff import backoff_delay
from duetime.stores.redis.resp.connection import Connection, connect, pack
from duetime.stores.redis.resp.deadlines import Deadlines
from duetime.stores.redis.resp.endpoint import Endpoint
from duetime.stores.redis.resp.errors import ReplyError
from duetime.stores.wire import to_bytes

#: A call that meets a lost connection is sent again this many times, after waits doubling
#: from the first up to the cap: about 3 s of outage in all.
SEND_TRIES = 8
RETRY_FIRST_SECONDS = 0.02
RETRY_CAP_SECONDS = 1.0
#: A call that gets no reply in this long (up to a second more) is given up on its
#: connection and sent again. Long enough for a big batch on a slow server.
CALL_TIMEOUT_SECONDS = 10.0
#: Error replies that refuse a command before it runs, for a while: sent again. LOADING: a
#: server that restarted reads its data; MASTERDOWN: a replica that lost its primary.
REFUSED_FOR_NOW = frozenset({"LOADING", "MASTERDOWN"})


class Source(Protocol):
    """Where the client connects: one server, or the primary a Sentinel group names now."""

    #: Whether a READONLY reply means that the primary moved (a failover): the connection
    #: is dropped and the call sent again, to wherever :meth:`endpoint` then says.
    follows_primary: bool

    async def endpoint(self) -> Endpoint:
        """Where the next connection goes."""

    def lost(self) -> None:
        """A connection failed: the next :meth:`endpoint` looks again, if it looks at all."""


class Fixed:
    """One server, always."""

    follows_primary = False

    def __init__(self, endpoint: Endpoint) -> None:
        self._endpoint = endpoint

    async def endpoint(self) -> Endpoint:
        return self._endpoint

    def lost(self) -> None:
        return None


def pack_args(args: Sequence[Any]) -> bytes:
    """One command's bytes. Text read from the store may hold bytes that are not UTF-8 (as
    lone surrogates: see duetime.stores.wire); it goes back as those very bytes."""
    try:
        return pack(tuple(args))
    except UnicodeEncodeError:
        return pack(tuple([to_bytes(a) if isinstance(a, str) else a for a in args]))


class RespClient:
    """Calls on the server ``source`` names, each on a connection of its own while it runs.

    Every command sent through it must be safe to run twice: a call whose connection broke
    after the command was written is sent again (duetime's scripts are written for that).
    """

    def __init__(self, source: Source, *, call_timeout: float | None = None) -> None:
        self.source = source
        # Connections kept between calls, one per call in flight at the busiest moment.
        self._idle: list[Connection] = []
        self._deadlines = Deadlines(call_timeout or CALL_TIMEOUT_SECONDS)
        self._closed = False

    async def call(self, *args: Any) -> Any:
        """One command's reply.

        Raises:
            ReplyError: the server's error reply.
            ConnectionLost, TimeoutError: no reply after SEND_TRIES sends.
        """
        reply = await self.send(pack_args(args), 1)
        if isinstance(reply, ReplyError):
            raise reply
        return reply

    async def call_many(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        """The replies of ``commands``, sent in one round trip on one connection; an error
        reply is a :class:`ReplyError` in the list, not raised."""
        replies: list[Any] = await self.send(
            b"".join(pack_args(c) for c in commands), len(commands)
        )
        return replies

    async def send(self, packed: bytes, replies: int) -> Any:
        """The reply (or list of ``replies`` replies) of the commands ``packed`` holds."""
        for attempt in range(1, SEND_TRIES + 1):
            conn: Connection | None = None
            try:
                with self._deadlines.watch():
                    conn = self._idle_one()
                    if conn is None:
                        conn = await connect(await self.source.endpoint())
                    reply = await conn.request(packed, replies)
            except OSError:  # ConnectionLost, TimeoutError
                if conn is not None:
                    conn.abort()
                self.source.lost()
                if attempt == SEND_TRIES:
                    raise
            except BaseException:
                # Cancelled (or worse) between sending and reading: the reply is still on
                # its way, so the connection is not used again.
                if conn is not None:
                    conn.abort()
                raise
            else:
                first = reply if replies == 1 else reply[0]
                if not isinstance(first, ReplyError):  # the common case, first
                    self._give_back(conn)
                    return reply
                if not self._refused(conn, first, attempt):
                    return reply
            await asyncio.sleep(backoff_delay(attempt, RETRY_FIRST_SECONDS, RETRY_CAP_SECONDS))
        raise AssertionError("unreachable")  # pragma: no cover

    def _refused(self, conn: Connection, reply: ReplyError, attempt: int) -> bool:
        """Whether the error ``reply`` (the first, of several) refused the command for now,
        and it is to be sent again; ``conn`` is given back, or dropped if its server was
        demoted."""
        code = reply.code
        follows = self.source.follows_primary
        if attempt < SEND_TRIES and code == "READONLY" and follows:
            conn.abort()  # a demoted primary: the next connection looks for the new one
            self.source.lost()
            return True
        self._give_back(conn)
        return attempt < SEND_TRIES and code in REFUSED_FOR_NOW

    def _idle_one(self) -> Connection | None:
        """An idle connection still open (the server may have closed some), if any."""
        idle = self._idle
        while idle:
            conn = idle.pop()
            if not conn.closed:
                return conn
        return None

    def _give_back(self, conn: Connection) -> None:
        if self._closed:
            conn.abort()
        else:
            self._idle.append(conn)

    async def aclose(self) -> None:
        """Close the idle connections, and those of the calls in flight as they end."""
        self._closed = True
        while self._idle:
            self._idle.pop().abort()
        await asyncio.sleep(0)  # the transports' connection_lost, before the loop ends
