"""Calls on a Redis server through duetime's own connections: one call in flight on each,
at most ``max_connections`` of them (a call beyond waits for one to be free), the idle ones
kept for the next call, and a call that meets a lost connection (or a server still loading
its data, or a demoted primary behind Sentinel) sent again on a new one. The connections
are those of the running event loop: a call from a new loop lets go of the old loop's."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Sequence
from typing import Any, Protocol

from duetime._backoff import backoff_delay
from duetime.loops import LoopBound
from duetime.stores.redis.resp.address import Endpoint
from duetime.stores.redis.resp.connection import Connection, connect, pack
from duetime.stores.redis.resp.deadlines import Deadlines
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
#: The most connections one client opens at once. A worker needs one per call in flight:
#: its claims, leases and outcomes (16 handlers by default, each a call at a time) and its
#: batches (3 chunks in flight); 50 leaves room for several task types, and keeps a burst
#: of thousands of calls (an app's request handlers all scheduling at once) from opening
#: thousands of connections: Redis' default maxclients is 10,000 for all its clients.
MAX_CONNECTIONS = 50


class Source(Protocol):
    """Where the client connects: one server, or the primary a Sentinel group names now."""

    #: Whether a READONLY reply means that the primary moved (a failover): the connection
    #: is dropped and the call sent again, to wherever :meth:`endpoint` then says.
    follows_primary: bool
    #: The most connections a client of this source opens, if its URL says (else the
    #: client's own setting, or MAX_CONNECTIONS).
    max_connections: int | None

    async def endpoint(self) -> Endpoint:
        """Where the next connection goes."""

    def lost(self) -> None:
        """A connection failed: the next :meth:`endpoint` looks again, if it looks at all."""


class Fixed:
    """One server, always."""

    follows_primary = False

    def __init__(self, endpoint: Endpoint) -> None:
        self._endpoint = endpoint
        self.max_connections = endpoint.max_connections

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

    def __init__(
        self,
        source: Source,
        *,
        call_timeout: float | None = None,
        max_connections: int | None = None,
    ) -> None:
        self.source = source
        #: The most connections open at once; calls beyond wait for a free one.
        self.max_connections = max_connections or source.max_connections or MAX_CONNECTIONS
        # Connections kept between calls, one per call in flight at the busiest moment.
        self._idle: list[Connection] = []
        #: The connections of the running loop open (idle or busy) or being made.
        self.opened = 0
        # Calls waiting for a connection: each is given one, or None to make one.
        self._waiting: deque[asyncio.Future[Connection | None]] = deque()
        self._seconds = call_timeout or CALL_TIMEOUT_SECONDS
        self._deadlines = Deadlines(self._seconds)
        self._loop = LoopBound()
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
        if asyncio.get_running_loop() is not self._loop.loop:
            self._follow_loop()
        for attempt in range(1, SEND_TRIES + 1):
            conn: Connection | None = None
            try:
                with self._deadlines.watch():
                    conn = self._idle_one() or await self._take()
                    reply = await conn.request(packed, replies)
            except OSError:  # ConnectionLost, TimeoutError
                if conn is not None:
                    self._lost(conn)
                self.source.lost()
                if attempt == SEND_TRIES:
                    raise
            except BaseException:
                # Cancelled (or worse) between sending and reading: the reply is still on
                # its way, so the connection is not used again.
                if conn is not None:
                    self._lost(conn)
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
            self._lost(conn)  # a demoted primary: the next connection looks for the new one
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
            self._lost(conn)
        return None

    async def _take(self) -> Connection:
        """A connection for a call: a new one while fewer than ``max_connections`` are
        open, else the first given back (or made when one is lost) after the calls that
        waited before this one."""
        if self.opened >= self.max_connections:
            waiter: asyncio.Future[Connection | None] = asyncio.get_running_loop().create_future()
            self._waiting.append(waiter)
            try:
                given = await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    self._pass_on(waiter.result())  # given as this call was cancelled
                else:
                    with contextlib.suppress(ValueError):  # unless passed over already
                        self._waiting.remove(waiter)
                raise
            if given is not None:
                return given
            # None: the place of a lost connection, handed on (counted still)
        else:
            self.opened += 1
        try:
            made: Connection = await connect(await self.source.endpoint())
        except BaseException:
            self._pass_on(None)
            raise
        return made

    def _pass_on(self, conn: Connection | None) -> None:
        """A connection free (or, for None, a place free) for the next call waiting; with
        none waiting, the connection is kept idle (or the place counted free)."""
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(conn)  # a connection, or its place (still counted)
                return
        if conn is None:
            self.opened -= 1
        else:
            self._idle.append(conn)

    def _lost(self, conn: Connection) -> None:
        """``conn`` is not to be used again: closed, and its place freed (or, made in a loop
        before the running one, let go of)."""
        if conn.loop is self._loop.loop:
            conn.abort()
            self._pass_on(None)
        else:
            conn.drop()

    def _give_back(self, conn: Connection) -> None:
        if self._closed or conn.loop is not self._loop.loop:
            self._lost(conn)
        elif self._waiting:
            self._pass_on(conn)
        else:  # the common case, first
            self._idle.append(conn)

    def _follow_loop(self) -> None:
        """The running loop is not the one recorded: it is recorded, and if it is a new one,
        the old loop's connections (and its calls' deadlines, and the calls it had waiting,
        which ended with it) are let go of."""
        if not self._loop.moved():
            return  # the first loop
        while self._idle:
            self._idle.pop().drop()
        self._waiting.clear()
        self.opened = 0
        self._deadlines = Deadlines(self._seconds)

    async def aclose(self) -> None:
        """Close the idle connections, and those of the calls in flight as they end."""
        self._closed = True
        self._follow_loop()
        while self._idle:
            self._idle.pop().abort()
        await asyncio.sleep(0)  # the transports' connection_lost, before the loop ends
