"""A worker's heartbeat record in the store, written every few seconds while it runs and
removed when it stops (:mod:`duetime.features.telemetry.presence`)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
from collections.abc import Coroutine
from typing import Any

from duetime._outage import OutageLog
from duetime.clock import Clock
from duetime.events import Listener
from duetime.features.base import WorkerRun
from duetime.features.telemetry.presence import BEAT_SECONDS, LAPSE_SECONDS
from duetime.stores.base import Store
from duetime.stores.capabilities import TELEMETRY, use

log = logging.getLogger(__name__)

#: How far back a stopped worker's record lapses (see Heartbeat.finish).
STOPPED_MARGIN_MS = 1000


class Heartbeat(Listener):
    """Keeps this worker's heartbeat record in the store while it runs."""

    def __init__(self, run: WorkerRun, version: str) -> None:
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.id = run.worker_id
        self._types = run.types
        self._state = run.status  # () -> (running per type, last claim ms)
        self._namespace = run.namespace
        self._version = version
        self._started_ms: int | None = None

    def record(self, now_ms: int) -> str:
        """The record as stored (JSON)."""
        if self._started_ms is None:
            self._started_ms = now_ms
        running, last_claim = self._state()
        return json.dumps(
            {
                "id": self.id,
                "host": self.host,
                "pid": self.pid,
                "started_ms": self._started_ms,
                "version": self._version,
                "namespace": self._namespace,
                "types": self._types,
                "running": running,
                "last_claim_ms": last_claim,
                "seen_ms": now_ms,
            },
            ensure_ascii=False,
        )

    def loops(self, store: Store, clock: Clock) -> list[Coroutine[Any, Any, None]]:
        return [self._beat_loop(store, clock)]

    async def finish(self, store: Store, clock: Clock) -> None:
        # The record lapses now rather than going: no longer live, it still tells that a
        # worker ran here a moment ago (``duetime schedule`` warns when none did in the
        # last minute), until the next beat of any worker forgets it. A second back, so
        # that a watcher whose clock runs a few ms behind this one's does not list it.
        now = clock.now_ms()
        await use(store, TELEMETRY).telemetry.beat(
            self.id, self.record(now), now - STOPPED_MARGIN_MS, now
        )

    async def _beat_loop(self, store: Store, clock: Clock) -> None:
        outage = OutageLog("heartbeat", log)
        while True:
            now = clock.now_ms()
            try:
                await use(store, TELEMETRY).telemetry.beat(
                    self.id, self.record(now), now + int(LAPSE_SECONDS * 1000), now
                )
            except Exception as exc:
                outage.failed(exc, "could not write this worker's heartbeat (%s)", exc)
            else:
                outage.ok()
            await asyncio.sleep(BEAT_SECONDS)
