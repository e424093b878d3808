"""A burst: a worker's run that claims and runs what is due now, and stops once nothing is
due and nothing runs (``duetime worker --burst``, and ``duetime.testing``'s ``run_due``).

The worker's own pieces do the work, as in a worker that runs on: the runners claim and run
through the executor, the outbox settles, the features' listeners hear every event. Only
the loop differs: one coroutine claims for every type, waits for runs to end, settles their
outcomes and claims again, so that it knows when nothing is left.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from duetime.errors import StoreError, ValidationError
from duetime.events import Listener
from duetime.stores.base import Store
from duetime.worker.failures import log_store_failure, store_backoff
from duetime.worker.outbox import Outbox
from duetime.worker.runner import TypeRunner

log = logging.getLogger(__name__)

#: A burst gives up after this many failures of its store in a row (a worker that runs on
#: waits for its store however long it takes; a burst is a job that has to end).
BURST_STORE_TRIES = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class Burst:
    """How a worker runs in a burst (``Worker(burst=...)``).

    Attributes:
        max_runs: claim at most this many tasks (None: as many as come due).
        rounds: claim again only once every run of the previous claims has ended, its
            outcome is settled and the listeners have done what it asked of them (a
            poller's next call brought forward), so that the same tasks run in the same
            order every time (the test harness); otherwise a slot is filled again as soon
            as a run ends.
    """

    max_runs: int | None = None
    rounds: bool = False

    def __post_init__(self) -> None:
        if self.max_runs is not None and (type(self.max_runs) is not int or self.max_runs < 1):
            raise ValidationError("max_runs", "must be an integer of 1 or more, or None")


async def run_burst(
    burst: Burst,
    store: Store,
    runners: Sequence[TypeRunner],
    outbox: Outbox,
    listeners: Sequence[Listener],
) -> Exception | None:
    """Claim and run what is due now until nothing is due and nothing runs, the runners
    are stopped, or ``burst.max_runs`` tasks were claimed. What still runs when it returns
    (after a stop) is the caller's to drain and settle, as after any stop.

    "Nothing is due" is decided twice: once a claim round finds nothing, the listeners
    finish what the last outcomes asked of them (a finished instruction brings its poller's
    next call forward), and a second round must find nothing too.

    Returns:
        None, or the error that ended it: the store failed :data:`BURST_STORE_TRIES` times
        in a row (the outcomes not settled then stay in the outbox).
    """
    claimed = failures = 0
    confirmed = False  # a round found nothing after the listeners caught up
    whole = asyncio.ALL_COMPLETED if burst.rounds else asyncio.FIRST_COMPLETED
    while not any(r.stopping for r in runners):
        left = None if burst.max_runs is None else burst.max_runs - claimed
        try:
            if not await outbox.settle(store):  # the follow-ups are due before the claim
                raise StoreError("the outcomes of the last runs could not be settled")
            if burst.rounds:
                await _caught_up(listeners)
            found = await _claim_round(store, runners, left)
        except Exception as exc:
            failures += 1
            if failures >= BURST_STORE_TRIES:
                log.error("burst stopped: the store failed %d times in a row: %s", failures, exc)
                return exc
            delay = store_backoff(failures)
            log_store_failure(exc, "burst: the store failed (%s); again in %.2f s", exc, delay)
            await asyncio.sleep(delay)
            continue
        failures = 0
        claimed += found
        running = [task for runner in runners for task in runner.unfinished()]
        if running:
            await asyncio.wait(running, return_when=whole)
        if found or running:
            confirmed = False
            continue
        if confirmed or left == 0:
            break
        await _caught_up(listeners)
        confirmed = True
    log.info("burst over: %d tasks claimed", claimed)
    return None


async def _claim_round(store: Store, runners: Sequence[TypeRunner], left: int | None) -> int:
    """One claim of what is due now for each type, in the worker's order, up to ``left``
    in all; returns how many were claimed (and started)."""
    found = 0
    for runner in runners:
        most = runner.task_type.policy.concurrency if left is None else left - found
        if most <= 0:
            break
        found += await runner.claim_now(store, most)
    return found


async def _caught_up(listeners: Sequence[Listener]) -> None:
    for listener in listeners:
        try:
            await listener.wait_idle()
        except Exception:  # a listener's fault stops no burst
            log.exception("listener %r failed while the burst waited for it", listener)
