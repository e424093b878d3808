"""A worker's metrics endpoint: an HTTP server on the worker's own event loop.

It runs in the event loop rather than in a thread (as prometheus-client's
``start_http_server`` would) because the store is async and bound to that loop: a scrape
refreshes the store gauges by awaiting them, with no hand-over between threads that could
block a scrape, or deadlock one while the loop stops. Rendering the metrics takes the loop
about 4 ms for ten task types (bench/metrics_listener.py), once per scrape.
"""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry

from duetime.errors import ConfigError, ValidationError
from duetime.events import Listener
from duetime.metrics.listener import MetricsListener
from duetime.metrics.store import StoreGauges, exposition

if TYPE_CHECKING:
    from duetime.client import Client
    from duetime.clock import Clock
    from duetime.stores.base import Store

log = logging.getLogger(__name__)

#: How long a client may take to send its request (a scraper sends it at once).
REQUEST_TIMEOUT_SECONDS = 10.0
#: The most header lines read from one request.
MAX_HEADERS = 100
PATHS = ("/metrics", "/")


class WorkerMetrics(Listener):
    """A worker's metrics: its listener, the store gauges, and the endpoint serving both,
    open while the worker runs (a listener of the worker's life; ``listener`` counts its
    events).

    Args:
        app: the worker's app.
        types: the worker's task types (their series start at zero).
        host, port: where to serve; port 0 picks a free one (see :attr:`port`).

    Attributes:
        registry: the worker's own registry (not prometheus-client's global one, so that
            two workers in one process do not clash); register metrics of your own in it.
    """

    def __init__(self, app: Client, types: Sequence[str], *, host: str, port: int) -> None:
        if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
            raise ValidationError(
                "metrics_port", f"must be a port number (0 to 65535), not {port!r}"
            )
        if not isinstance(host, str) or not host:
            raise ValidationError("metrics_host", f"must be a host name or address, not {host!r}")
        self.host = host
        self.port = port
        self.registry = CollectorRegistry()
        self.listener = MetricsListener(self.registry, types)
        self.store = StoreGauges(app)
        self.registry.register(self.store)
        self._server: asyncio.Server | None = None
        self._clients: set[asyncio.StreamWriter] = set()

    async def start(self, store: Store | None = None, clock: Clock | None = None) -> None:
        """Listen for scrapes.

        Raises:
            ConfigError: the address cannot be listened on (the port is in use, say).
        """
        try:
            server = await asyncio.start_server(self._serve, self.host, self.port)
        except OSError as exc:
            problem = "the port is in use" if exc.errno == errno.EADDRINUSE else str(exc)
            raise ConfigError(
                f"cannot serve metrics on {self.host}:{self.port}: {problem}"
            ) from None
        self._server = server
        self.port = server.sockets[0].getsockname()[1]
        log.info("metrics served at http://%s:%d/metrics", self.host, self.port)

    async def close(self) -> None:
        """Stop listening (scrapes in progress are cut)."""
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
                method, path, accept = await _read_request(reader)
            if method not in ("GET", "HEAD"):
                status, body, content_type = "405 Method Not Allowed", b"GET only\n", "text/plain"
            elif path.split("?", 1)[0] not in PATHS:
                status, body, content_type = "404 Not Found", b"see /metrics\n", "text/plain"
            else:
                await self.store.refresh()
                status = "200 OK"
                body, content_type = exposition(self.registry, accept)
            head = (
                f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode("latin-1") + (b"" if method == "HEAD" else body))
            await writer.drain()
        except (TimeoutError, ValueError, ConnectionError) as exc:
            log.debug("metrics: a request went wrong: %r", exc)
        finally:
            self._clients.discard(writer)
            writer.close()


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, str]:
    """The method, path and Accept header of one HTTP request (its body is not read)."""
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
