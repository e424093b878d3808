"""Store-wide gauges (tasks due, running and dead per type), read from the store on scrape
and cached for a few seconds."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from duetime.stores.base import STATES, State

if TYPE_CHECKING:
    from duetime.client import Client

log = logging.getLogger(__name__)

#: A reading of the store's counts: per type, per state.
Counts = Mapping[str, Mapping[State, int]]

#: How long one reading of the store serves scrapes: Prometheus scrapes every 15 s or more
#: by default, so 5 s keeps the gauges fresh and a busy (or several) scraper from loading
#: the store with a count per type and scrape.
DEFAULT_CACHE_SECONDS = 5.0
#: The longest a reading may take before the scrape is served without it.
READ_TIMEOUT_SECONDS = 5.0


class StoreGauges:
    """A Prometheus collector of the store's counts per task type.

    ``collect`` (called by the registry, in any thread) only reads the cache; ``await
    refresh()`` reads the store again when the cache is older than ``cache_seconds``. It
    must run in the event loop the app's store was opened in.

    Args:
        app: the app (or client) whose store and task types to read.
        types: the task types to count; default every type the app knows.
        cache_seconds: how long a reading serves, successful or not.
        read: how to read the counts instead (``types`` is then unused): for a reader of
            types the app does not know, such as the dashboard's.
    """

    def __init__(
        self,
        app: Client,
        types: Sequence[str] | None = None,
        *,
        cache_seconds: float = DEFAULT_CACHE_SECONDS,
        read: Callable[[], Awaitable[Counts]] | None = None,
    ) -> None:
        self.app = app
        self.types = None if types is None else tuple(types)
        self.cache_seconds = cache_seconds
        self.reads = 0  # readings of the store made, successful or not
        self._read = read or self._read_types
        self._counts: Counts = {}
        self._up = False
        self._read_at: float | None = None  # time.monotonic() of the last reading
        self._lock = asyncio.Lock()

    def _fresh(self) -> bool:
        read_at = self._read_at
        return read_at is not None and time.monotonic() - read_at < self.cache_seconds

    async def refresh(self) -> None:
        """Read the store's counts unless the cache is fresh; never raises but
        CancelledError (a failed reading is logged and shown as ``duetime_store_up 0``)."""
        if self._fresh():
            return
        async with self._lock:  # concurrent scrapes share one reading
            if self._fresh():
                return
            self.reads += 1
            try:
                async with asyncio.timeout(READ_TIMEOUT_SECONDS):
                    self._counts = await self._read()
                self._up = True
            except Exception as exc:
                log.warning("metrics: could not read the store's counts: %s", exc)
                self._up = False
            self._read_at = time.monotonic()

    async def _read_types(self) -> Counts:
        names = sorted(self.app.types) if self.types is None else self.types
        counts = await asyncio.gather(*(self.app.counts(name) for name in names))
        return dict(zip(names, counts, strict=True))

    def describe(self) -> Iterable[Metric]:
        return self._families()

    def collect(self) -> Iterable[Metric]:
        return self._families(self._counts, self._up)

    @staticmethod
    def _families(counts: Counts | None = None, up: bool = False) -> Iterator[Metric]:
        tasks = GaugeMetricFamily(
            "duetime_store_tasks",
            "Tasks in the store per type and state (due, running, dead), across every "
            "worker; read on scrape, cached a few seconds.",
            labels=["type", "state"],
        )
        alive = GaugeMetricFamily(
            "duetime_store_up", "1 if the last reading of the store's counts succeeded."
        )
        if counts is not None:
            for name, by_state in counts.items():
                for state in STATES:
                    tasks.add_metric([name, state], by_state.get(state, 0))
            alive.add_metric([], 1 if up else 0)
        yield tasks
        yield alive

    async def render(self, accept: str = "") -> tuple[bytes, str]:
        """The store gauges alone in Prometheus' exposition format, refreshed by awaiting
        (for an endpoint served in an event loop, such as the dashboard's ``/metrics``).

        Args:
            accept: the request's Accept header (OpenMetrics when it asks for it).

        Returns:
            The body and its content type.
        """
        await self.refresh()
        registry = CollectorRegistry()
        registry.register(self)
        return exposition(registry, accept)


def exposition(registry: CollectorRegistry, accept: str = "") -> tuple[bytes, str]:
    """``registry``'s metrics in the format ``accept`` asks for, and its content type."""
    encode, content_type = choose_encoder(accept)
    return encode(registry), content_type


async def store_metrics(app: Client, types: Sequence[str] | None = None) -> tuple[bytes, str]:
    """The store's counts per type, read now (no cache), as a Prometheus exposition body
    and its content type. Keep a :class:`StoreGauges` to cache readings across calls."""
    return await StoreGauges(app, types, cache_seconds=0).render()
