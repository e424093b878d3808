"""A worker's health checks, for a process supervisor or Kubernetes: ``GET /healthz`` (is the
worker alive and does its store answer) and ``GET /readyz`` (has it started, and is it not
stopping), served on the worker's event loop.

The store is probed by a loop of the checks' own (one ``time_ms`` round trip a few times per
interval) rather than by watching the worker's own calls: a worker whose slots are all taken
by long handlers, or whose types are paused, makes no claim for minutes while being
perfectly healthy, and watching the claim path would put a clock read on the hot path for
what one round trip every few seconds tells as well.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Literal, Protocol

from duetime.errors import ValidationError
from duetime.events import Listener

if TYPE_CHECKING:  # the endpoint is loaded by the worker that serves the checks
    from duetime.clock import Clock
    from duetime.probes.endpoint import Endpoint, Reply, Request, Route
    from duetime.stores.base import Store

log = logging.getLogger(__name__)

#: The interface the checks are served on unless told: this machine only.
DEFAULT_HEALTH_HOST = "127.0.0.1"
#: How long the store may go without answering before ``/healthz`` says 503, in seconds.
#: Kubernetes probes every 10 s by default, so one failed probe means an outage of 10 s.
DEFAULT_HEALTH_INTERVAL = 10.0
#: Probes per interval: with four, a store that answers always has an answer within the
#: last interval, even when one probe is slow or lost.
PROBES_PER_INTERVAL = 4
HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"

Phase = Literal["starting", "running", "stopped"]


class Watched(Protocol):
    """What the checks read of their worker."""

    @property
    def stopping(self) -> bool: ...

    @property
    def running(self) -> dict[str, int]: ...


def check_interval(interval: object) -> float:
    """``interval`` as seconds.

    Raises:
        ValidationError: not a number above 0 (``health_interval``).
    """
    if isinstance(interval, bool) or not isinstance(interval, int | float) or not interval > 0:
        raise ValidationError("health_interval", f"must be seconds above 0, not {interval!r}")
    return float(interval)


class WorkerHealth(Listener):
    """The health checks of one worker (a listener of its life), served on ``endpoint``.

    ``/healthz``: 200 while the worker runs (stopping gracefully included: it is finishing
    its handlers as it should) and its store answered within the last ``interval`` seconds;
    503 otherwise, the body saying why ("store unreachable for 34 s: ...", "stopped").
    ``/readyz``: 200 once the worker's claim loops run; 503 while it starts or stops.

    Args:
        worker: the worker whose state the checks read.
        endpoint: the HTTP server to answer on (the routes are added to it).
        owns_endpoint: start and close ``endpoint`` with the worker; False when another
            listener owns it (the metrics, on a shared port).
        interval: seconds the store may go without answering before ``/healthz`` fails.
        monotonic: the clock durations are measured with (tests pass their own).
    """

    def __init__(
        self,
        worker: Watched,
        endpoint: Endpoint,
        *,
        owns_endpoint: bool = True,
        interval: float = DEFAULT_HEALTH_INTERVAL,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval = check_interval(interval)
        self.endpoint = endpoint
        self._worker = worker
        self._owns_endpoint = owns_endpoint
        self._monotonic = monotonic
        self.phase: Phase = "starting"
        self._last_ok: float | None = None  # when the store last answered (monotonic)
        self._since = monotonic()  # when the checks started, for an outage from the start
        self._error = ""  # why the last probe failed, "" after a success
        self._reported = False  # the outage was logged
        routes: dict[str, Route] = {HEALTH_PATH: self._healthz, READY_PATH: self._readyz}
        endpoint.add(routes, "health")

    @property
    def port(self) -> int:
        """The port the checks are served on (the one picked, once started, for port 0)."""
        return self.endpoint.port

    # -- the worker's life ----------------------------------------------------------------

    async def start(self, store: Store, clock: Clock) -> None:
        """Probe the store once and listen (if the endpoint is the checks' own).

        Raises:
            ConfigError: the address cannot be listened on.
        """
        self._since = self._monotonic()
        await self._probe(store)
        if self._owns_endpoint:
            await self.endpoint.start()

    def loops(self, store: Store, clock: Clock) -> list[Coroutine[Any, Any, None]]:
        return [self._probe_loop(store)]

    async def finish(self, store: Store, clock: Clock) -> None:
        self.phase = "stopped"

    async def close(self) -> None:
        self.phase = "stopped"
        if self._owns_endpoint:
            await self.endpoint.close()

    # -- the checks -----------------------------------------------------------------------

    def health(self) -> tuple[bool, str]:
        """Whether the worker is healthy, and a line saying why (the ``/healthz`` body)."""
        if self.phase == "stopped":
            return False, "stopped"
        silent = self._monotonic() - (self._since if self._last_ok is None else self._last_ok)
        # Only a failed probe makes the store unreachable: a probe that is merely late was
        # held up by a blocked event loop, which answered no request meanwhile either.
        if self._error and silent > self.interval:
            return False, f"store unreachable for {silent:.0f} s: {self._error}"
        if self._last_ok is None:
            return True, "ok: starting"
        state = "ok:"
        if self._worker.stopping:
            running = sum(self._worker.running.values())
            state = f"ok: stopping, {running} handlers finishing;"
        return True, f"{state} store answered {silent:.1f} s ago"

    def readiness(self) -> tuple[bool, str]:
        """Whether the worker is ready (claiming), and a line saying why (``/readyz``)."""
        if self.phase == "running" and self._worker.stopping:
            return False, "stopping"
        if self.phase != "running":
            return False, self.phase
        return True, "ready"

    async def _healthz(self, request: Request) -> Reply:
        return _reply(*self.health())

    async def _readyz(self, request: Request) -> Reply:
        return _reply(*self.readiness())

    # -- the probe ------------------------------------------------------------------------

    async def _probe_loop(self, store: Store) -> None:
        # The worker starts its listeners' loops together with its claim loops: from here
        # on, it claims.
        self.phase = "running"
        while True:
            await asyncio.sleep(self.interval / PROBES_PER_INTERVAL)
            await self._probe(store)

    async def _probe(self, store: Store) -> None:
        try:
            # Bounded: a store that takes no calls (a black-holed connection) fails the
            # check once the interval has passed, not when the driver gives up.
            async with asyncio.timeout(self.interval):
                await store.time_ms()
        except TimeoutError:
            self._failed(f"no answer in {self.interval:g} s")
        except Exception as exc:  # any failure of the store is what the check reports
            self._failed(str(exc) or type(exc).__name__)
        else:
            self._last_ok = self._monotonic()
            self._error = ""
            if self._reported:
                self._reported = False
                log.info("health: the store answers again; %s answers 200", HEALTH_PATH)

    def _failed(self, error: str) -> None:
        self._error = error
        healthy, why = self.health()
        if not healthy and not self._reported:
            self._reported = True
            log.warning("health: %s answers 503: %s", HEALTH_PATH, why)


def _reply(ok: bool, why: str) -> Reply:
    from duetime.probes.endpoint import Reply

    return Reply(200 if ok else 503, f"{why}\n".encode())
