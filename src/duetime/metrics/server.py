"""A worker's metrics endpoint: ``/metrics`` served on the worker's own event loop.

It runs in the event loop rather than in a thread (as prometheus-client's
``start_http_server`` would) because the store is async and bound to that loop: a scrape
refreshes the store gauges by awaiting them, with no hand-over between threads that could
block a scrape, or deadlock one while the loop stops. Rendering the metrics takes the loop
about 4 ms for ten task types (bench/metrics_listener.py), once per scrape. The server is
:class:`~duetime.probes.endpoint.Endpoint`, which the worker's health routes may share.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry

from duetime.events import Listener
from duetime.metrics.listener import MetricsListener
from duetime.metrics.store import StoreGauges, exposition
from duetime.probes.endpoint import Endpoint, Reply, Request

if TYPE_CHECKING:
    from duetime.client import Client
    from duetime.clock import Clock
    from duetime.stores.base import Store

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
        endpoint: the HTTP server (other routes may be added to it before the worker
            starts: the health checks, on a shared port).
    """

    def __init__(self, app: Client, types: Sequence[str], *, host: str, port: int) -> None:
        self.endpoint = Endpoint(host, port, dict.fromkeys(PATHS, self._scrape), what="metrics")
        self.registry = CollectorRegistry()
        self.listener = MetricsListener(self.registry, types)
        self.store = StoreGauges(app)
        self.registry.register(self.store)

    @property
    def host(self) -> str:
        """The interface served on."""
        return self.endpoint.host

    @property
    def port(self) -> int:
        """The port served on (the one picked, once started, when asked for port 0)."""
        return self.endpoint.port

    async def start(self, store: Store | None = None, clock: Clock | None = None) -> None:
        """Listen for scrapes.

        Raises:
            ConfigError: the address cannot be listened on (the port is in use, say).
        """
        await self.endpoint.start()

    async def close(self) -> None:
        """Stop listening (scrapes in progress are cut)."""
        await self.endpoint.close()

    async def _scrape(self, request: Request) -> Reply:
        await self.store.refresh()
        body, content_type = exposition(self.registry, request.accept)
        return Reply(200, body, content_type)
