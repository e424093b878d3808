"""One claim held by a worker, from its claim until its outcome is settled: what the
runner starts, the executor marks as it calls the handler, the outbox settles, and the
listeners of finished runs read (``Listener.finished``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from duetime.stores.base import Claim, Outcome


@dataclass(eq=False, slots=True)
class Run:
    """A claim held by this worker.

    Attributes:
        claim: the lease, with the task's id, due time and record.
        early: claimed before it was due (the look-ahead): it waits for its time.
        task: the asyncio task running it.
        finished: its outcome is known (it may not be settled yet).
        fired_ms: when its handler started, by the store's clock (0.0: it did not start,
            or no listener asked for it: see ``Executor.marks``).
        outcome: what follows the run, once finished.
    """

    claim: Claim
    early: bool = False
    task: asyncio.Task[None] | None = None
    finished: bool = False
    fired_ms: float = 0.0
    outcome: Outcome | None = None
