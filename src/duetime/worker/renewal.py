"""Lease renewal: one loop extends the leases of everything a worker holds, every third of
the shortest lease, in one call per task type."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from duetime._outage import OutageLog
from duetime.clock import Clock
from duetime.stores.base import Store
from duetime.worker.runner import TypeRunner

log = logging.getLogger(__name__)


def renew_interval(runners: Sequence[TypeRunner]) -> float:
    """Seconds between renewals: a third of the shortest lease."""
    return min(r.lease_ms for r in runners) / 3000


async def renew_loop(store: Store, runners: Sequence[TypeRunner], clock: Clock) -> None:
    """Extend every held lease (running, or waiting to be settled) until cancelled."""
    interval = renew_interval(runners)
    outage = OutageLog("lease renewals", log)
    while True:
        await asyncio.sleep(interval)
        for runner in runners:
            await _renew(store, runner, clock, outage)


async def _renew(store: Store, runner: TypeRunner, clock: Clock, outage: OutageLog) -> None:
    held = [run.claim for run in runner.active.values()]
    if not held:
        return
    name = runner.name
    try:
        lost = await store.extend(name, held, clock.now_ms() + runner.lease_ms)
    except Exception as exc:
        outage.failed(exc, "renewing %d %s leases failed (%s)", len(held), name, exc)
        return
    outage.ok()
    for claim in lost:
        run = runner.active.get(claim.token)
        # A run whose outcome is being settled may lose its lease to that settle.
        if run is not None and not run.finished:
            log.warning(
                "%s/%s: lease lost while running; its outcome will not be kept", name, claim.id
            )
