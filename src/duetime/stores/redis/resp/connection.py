"""One connection to a Redis server: made, introduced (AUTH, SELECT, CLIENT SETINFO), and
then commands written and their replies read back in order, by hiredis."""

from __future__ import annotations

import asyncio
import socket
from collections import deque
from collections.abc import Callable
from typing import Any, cast

import hiredis

from duetime.stores.redis.resp.address import Endpoint
from duetime.stores.redis.resp.errors import ConnectionLost, ReplyError
from duetime.version import VERSION

#: One command's bytes, packed in C (hiredis' stubs type the argument as a 1-tuple).
pack = cast("Callable[[tuple[Any, ...]], bytes]", hiredis.pack_command)


class _ProtocolFault(Exception):
    """What hiredis raises on bytes that are not RESP."""


#: The bytes one read takes from the socket at most, into a buffer each connection keeps:
#: asyncio's default reads make a new 256 KiB object a read, which glibc allocates and frees
#: with mmap and munmap (three system calls a reply, half a W1 call's system time).
READ_SIZE = 65536


class Connection(asyncio.BufferedProtocol):
    """A connection whose replies answer its requests in order.

    :meth:`request` writes packed commands and returns a future of their replies; several
    requests may be in flight. A request whose future was cancelled still has its reply
    read (and dropped). When the connection breaks, every request in flight fails with
    :class:`ConnectionLost` and :attr:`closed` is set.
    """

    def __init__(self) -> None:
        self._reader = hiredis.Reader(protocolError=_ProtocolFault, replyError=ReplyError)
        # Per request in flight: its future, and the replies gathered when it awaits several.
        self._waiting: deque[tuple[asyncio.Future[Any], list[Any] | None, int]] = deque()
        self._transport: asyncio.Transport | None = None
        self._buffer = memoryview(bytearray(READ_SIZE))
        #: The loop the connection was made in, the only one that can use it.
        self.loop = self._loop = asyncio.get_running_loop()
        self.closed = False
        self._lost: BaseException | None = None

    # -- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            # A peer that vanished without a word (a host down, a cut network) is found by
            # the kernel's keepalive probes, not only by the call's deadline.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._buffer

    def buffer_updated(self, nbytes: int) -> None:
        # hiredis copies what it keeps; it reads any buffer (its stubs say bytes only).
        self._reader.feed(self._buffer, 0, nbytes)  # type: ignore[arg-type]
        self.replies()

    def replies(self) -> None:
        """Hand each reply read so far to its request."""
        reader = self._reader
        try:
            while (reply := reader.gets()) is not False:
                self._answer(reply)
        except (_ProtocolFault, IndexError) as exc:  # IndexError: a reply nobody asked for
            self.abort(ConnectionLost(f"Redis sent what is not a reply to a request: {exc!r}"))

    def _answer(self, reply: Any) -> None:
        """Give ``reply`` to the request in flight that it answers."""
        future, gathered, count = self._waiting[0]
        if gathered is None:
            self._waiting.popleft()
            if not future.done():
                future.set_result(reply)
            return
        gathered.append(reply)
        if len(gathered) == count:
            self._waiting.popleft()
            if not future.done():
                future.set_result(gathered)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        lost = self._lost or ConnectionLost(f"connection lost{f': {exc}' if exc else ''}")
        while self._waiting:
            future = self._waiting.popleft()[0]
            if not future.done():
                future.set_exception(lost)

    # -- requests --------------------------------------------------------------------------

    def request(self, packed: bytes, replies: int = 1) -> asyncio.Future[Any]:
        """Write ``packed`` (that many commands: :func:`pack`), and return a future of the
        reply (a list of them when ``replies`` is over 1). Error replies are values here,
        as :class:`ReplyError` instances."""
        transport = self._transport
        if self.closed or transport is None or transport.is_closing():
            raise self._lost or ConnectionLost("the connection is closed")
        future = self._loop.create_future()
        self._waiting.append((future, None if replies == 1 else [], replies))
        transport.write(packed)
        return future

    def abort(self, reason: BaseException | None = None) -> None:
        """Close at once; the requests in flight fail with ``reason`` (ConnectionLost)."""
        if reason is not None and self._lost is None:
            self._lost = reason
        if self._transport is not None:
            self._transport.abort()  # connection_lost follows, on the loop
        self.closed = True

    def drop(self) -> None:
        """Let go of the connection from another loop than its own: aborted on its loop if
        that still runs, else its socket closed here, without the loop (a closed loop runs
        nothing, not even a transport's own close)."""
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.abort)
            return
        self.closed = True
        if self._transport is not None:
            let_go(self._transport)
            self._transport = None


def let_go(transport: asyncio.BaseTransport) -> None:
    """Close the socket of ``transport``, whose loop is closed, as that loop would have.

    asyncio offers no public way: its close and abort ask the loop to finish them, which a
    closed loop refuses. So this does what the selector transport's own end does: its
    socket closed and forgotten, the transport marked closing (and, over TLS, the inner
    transport's, and the outer one marked closed), so that none warns as an unclosed
    transport (or stream) when collected.
    """
    inner = getattr(getattr(transport, "_ssl_protocol", None), "_transport", None)
    for layer in (transport, inner):
        sock = getattr(layer, "_sock", None)
        if sock is not None:
            sock.close()
            layer._sock = None  # type: ignore[union-attr]
            layer._closing = True  # type: ignore[union-attr]
    if inner is not None:
        transport._closed = True  # type: ignore[attr-defined]


async def connect(endpoint: Endpoint, protocol: Callable[[], Connection] = Connection) -> Any:
    """A connection to ``endpoint``, made and introduced; ``protocol`` makes it.

    Raises:
        ConnectionLost: the server could not be reached in ``endpoint.connect_timeout``.
        ReplyError: it refused the credentials or the database.
    """
    loop = asyncio.get_running_loop()
    conn: Connection | None = None
    try:
        async with asyncio.timeout(endpoint.connect_timeout):
            if endpoint.path is not None:
                _, conn = await loop.create_unix_connection(protocol, endpoint.path)
            else:
                tls = endpoint.tls
                _, conn = await loop.create_connection(
                    protocol,
                    endpoint.host,
                    endpoint.port,
                    ssl=None if tls is None else tls.context(),
                    server_hostname=None if tls is None else endpoint.host,
                )
            await _introduce(conn, endpoint)
        return conn
    except TimeoutError:
        if conn is not None:
            conn.abort()
        raise ConnectionLost(
            f"no connection to Redis at {endpoint.address} in {endpoint.connect_timeout} s"
        ) from None
    except OSError as exc:
        if conn is not None:
            conn.abort()
        if isinstance(exc, ConnectionLost):
            raise
        raise ConnectionLost(f"cannot connect to Redis at {endpoint.address}: {exc}") from exc
    except BaseException:
        if conn is not None:
            conn.abort()
        raise


async def _introduce(conn: Connection, endpoint: Endpoint) -> None:
    """AUTH and SELECT as the endpoint asks, and the client's name (``CLIENT SETINFO``,
    shown by ``CLIENT LIST`` on Redis 7.2 and later, refused by older servers and ignored
    then): all in one round trip."""
    commands: list[tuple[Any, ...]] = []
    if endpoint.password is not None:
        user = () if endpoint.username is None else (endpoint.username,)
        commands.append(("AUTH", *user, endpoint.password))
    if endpoint.db:
        commands.append(("SELECT", endpoint.db))
    checked = len(commands)
    commands += [
        ("CLIENT", "SETINFO", "LIB-NAME", "duetime"),
        ("CLIENT", "SETINFO", "LIB-VER", VERSION),
    ]
    replies = await conn.request(b"".join(pack(c) for c in commands), len(commands))
    for reply in replies[:checked]:
        if isinstance(reply, ReplyError):
            raise reply
