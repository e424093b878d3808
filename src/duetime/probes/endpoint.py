"""A worker's HTTP endpoint: a small server on the worker's own event loop that answers a few
GET paths (``/metrics``, ``/healthz``, ``/readyz``), open while the worker runs.

It runs in the event loop rather than in a thread because what it reports lives there: the
store is async and bound to that loop (a scrape awaits the store gauges), and an answer
from the loop itself is the proof that the loop is running (a loop blocked by a handler
answers no health probe). One endpoint serves the routes of several listeners when they
share a port (metrics and health).
"""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from duetime.errors import ConfigError, ValidationError
from duetime.events import Listener

if TYPE_CHECKING:
    from duetime.clock import Clock
    from duetime.stores.base import Store

log = logging.getLogger(__name__)

#: How long a client may take to send its request (a scraper or a probe sends it at once).
REQUEST_TIMEOUT_SECONDS = 10.0
#: The most header lines read from one request.
MAX_HEADERS = 100
TEXT = "text/plain; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Request:
    """What a route is told of a request: its path (without the query) and Accept header."""

    path: str
    accept: str


@dataclass(frozen=True, slots=True)
class Reply:
    """A route's answer."""

    status: int
    body: bytes
    content_type: str = TEXT


#: A route: the answer to a GET (or HEAD) of its path.
Route = Callable[[Request], Awaitable[Reply]]

_REASONS = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 503: "Service Unavailable"}


def check_address(host: object, port: object, what: str) -> None:
    """Refuse a bad host or port, naming the option (``<what>_host``, ``<what>_port``).

    Raises:
        ValidationError: ``port`` is not 0 to 65535, or ``host`` is not a non-empty string.
    """
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
        raise ValidationError(f"{what}_port", f"must be a port number (0 to 65535), not {port!r}")
    if not isinstance(host, str) or not host:
        raise ValidationError(f"{what}_host", f"must be a host name or address, not {host!r}")


class Endpoint(Listener):
    """An HTTP server answering ``routes`` on ``host:port`` while a worker runs (a listener
    of the worker's life: it listens in :meth:`start` and stops in :meth:`close`).

    Args:
        host, port: where to listen; port 0 picks a free one (see :attr:`port` once
            started).
        routes: the answer for each path.
        what: what it serves, for messages ("metrics", "health").
    """

    def __init__(self, host: str, port: int, routes: Mapping[str, Route], *, what: str) -> None:
        check_address(host, port, what)
        self.host = host
        self.port = port
        self.what = what
        self.routes: dict[str, Route] = {}
        self._served: list[tuple[str, list[str]]] = []  # what, and its paths, for the log
        self._server: asyncio.Server | None = None
        self._clients: set[asyncio.StreamWriter] = set()
        self.add(routes, what)

    def add(self, routes: Mapping[str, Route], what: str) -> None:
        """Serve ``routes`` too (before the worker starts); ``what`` they are, for the log."""
        self.routes.update(routes)
        paths = [path for path in routes if path != "/"]
        if paths:
            self._served.append((what, paths))
        if what not in self.what:
            self.what = f"{self.what} and {what}"

    async def start(self, store: Store | None = None, clock: Clock | None = None) -> None:
        """Listen.

        Raises:
            ConfigError: the address cannot be listened on (the port is in use, say).
        """
        try:
            server = await asyncio.start_server(self._serve, self.host, self.port)
        except OSError as exc:
            problem = "the port is in use" if exc.errno == errno.EADDRINUSE else str(exc)
            raise ConfigError(
                f"cannot serve {self.what} on {self.host}:{self.port}: {problem}"
            ) from None
        self._server = server
        self.port = server.sockets[0].getsockname()[1]
        shown = f"[{self.host}]" if ":" in self.host else self.host
        for what, paths in self._served:
            log.info("%s served at http://%s:%d%s", what, shown, self.port, " and ".join(paths))

    async def close(self) -> None:
        """Stop listening (requests in progress are cut)."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
            for writer in self._clients:
                writer.close()
            await server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._clients.add(writer)
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT_SECONDS):
                method, path, accept = await read_request(reader)
            reply = await self._answer(method, path.split("?", 1)[0], accept)
            head = (
                f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, '')}\r\n"
                f"Content-Type: {reply.content_type}\r\n"
                f"Content-Length: {len(reply.body)}\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode("latin-1") + (b"" if method == "HEAD" else reply.body))
            await writer.drain()
        except (TimeoutError, ValueError, ConnectionError) as exc:
            log.debug("%s: a request went wrong: %r", self.what, exc)
        finally:
            self._clients.discard(writer)
            writer.close()

    async def _answer(self, method: str, path: str, accept: str) -> Reply:
        if method not in ("GET", "HEAD"):
            return Reply(405, b"GET only\n")
        route = self.routes.get(path)
        if route is None:
            paths = ", ".join(p for p in self.routes if p != "/")
            return Reply(404, f"see {paths}\n".encode())
        return await route(Request(path, accept))


async def read_request(reader: asyncio.StreamReader) -> tuple[str, str, str]:
    """The method, path and Accept header of one HTTP request (its body is not read).

    Raises:
        ValueError: not an HTTP request line.
    """
    line = (await reader.readline()).decode("latin-1")
    parts = line.split()
    if len(parts) != 3:
        raise ValueError(f"not an HTTP request line: {line[:80]!r}")
    accept = ""
    for _ in range(MAX_HEADERS):
        header = (await reader.readline()).decode("latin-1").strip()
        if not header:
            break
        name, _, value = header.partition(":")
        if name.strip().lower() == "accept":
            accept = value.strip()
    return parts[0], parts[1], accept
