"""The outbox: outcomes of runs, settled in batches by one flusher (a group commit).

Outcomes gather while a settle call is in flight and go together in the next, one call per
task type, so a busy worker spends a round trip per batch, never per task.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any, cast

from duetime._outage import OutageLog
from duetime.clock import Clock
from duetime.events import Events, WorkerEvent
from duetime.stores.base import Outcome, Store
from duetime.stores.capabilities import RUN_HISTORY, use
from duetime.stores.runs import RunLog
from duetime.worker.failures import store_backoff
from duetime.worker.run import Run

log = logging.getLogger(__name__)

#: Settling at shutdown gives up after this many failed tries (the leases then expire and
#: the tasks run again elsewhere: nothing is lost).
FINAL_SETTLE_TRIES = 5


class _Lane:
    """The finished runs of one task type waiting to be settled, and the runs its runner
    holds (a settled one leaves them)."""

    __slots__ = ("held", "runs")

    def __init__(self, held: MutableMapping[int, Any]) -> None:
        self.held = held
        self.runs: list[Run] = []


class Outbox:
    """Outcomes waiting to be settled, and the one flusher that settles them.

    Args:
        records: the task types whose runs the settles record in the store's run history,
            and how (their outcomes carry what it keeps: ``worker.run.note``).
    """

    def __init__(
        self,
        clock: Clock,
        events: Events | None = None,
        records: Mapping[str, RunLog] | None = None,
    ) -> None:
        self.clock = clock
        self.events = events or Events()
        self.records = dict(records or {})
        self._lanes: dict[str, _Lane] = {}
        self._ready = asyncio.Event()
        self._lock = asyncio.Lock()
        self._outage = OutageLog("settles", log)

    def lane(self, task_type: str, held: MutableMapping[int, Any]) -> Callable[[Run], None]:
        """How a finished run of ``task_type`` is queued (its ``run.outcome`` known), looked
        up once (a runner's, for its every run); ``held`` maps the tokens its runner holds,
        and loses each run's once it is settled."""
        lane = self._lanes.get(task_type)
        if lane is None:
            lane = self._lanes[task_type] = _Lane(held)
        ready = self._ready

        def put(run: Run) -> None:
            lane.runs.append(run)
            if not ready.is_set():
                ready.set()

        return put

    @property
    def waiting(self) -> int:
        """How many outcomes wait to be settled."""
        return sum(len(lane.runs) for lane in self._lanes.values())

    async def flush_loop(self, store: Store) -> None:
        """Settle whatever waits, for as long as the worker runs."""
        errors = 0
        while True:
            await self._ready.wait()
            self._ready.clear()
            if await self.settle(store):
                errors = 0
            else:
                errors += 1
                await asyncio.sleep(store_backoff(errors))

    async def settle(self, store: Store) -> bool:
        """Send every outcome waiting; False (and they wait on) when the store failed.

        One settle at a time: the shutdown's final flush must not see an empty outbox while
        the flush loop's call is still in flight, and then cancel that call.
        """
        async with self._lock:
            return await self._settle_now(store)

    async def _settle_now(self, store: Store) -> bool:
        for name, lane in list(self._lanes.items()):
            runs = lane.runs
            if not runs:
                continue
            lane.runs = []
            try:
                # Every queued run has its outcome (the runner sets it first).
                outcomes = cast(list[Outcome], [run.outcome for run in runs])
                record = self.records.get(name)
                if record is None:
                    kept = await store.settle(name, outcomes, self.clock.now_ms())
                else:
                    recorded = use(store, RUN_HISTORY)
                    kept = await recorded.settle(name, outcomes, self.clock.now_ms(), record)
            except Exception as exc:
                self._outage.failed(
                    exc, "settling %d %s outcomes failed (%s); trying again", len(runs), name, exc
                )
                lane.runs[:0] = runs  # first again, before what finished meanwhile
                self._ready.set()
                return False
            done = _settled(name, lane.held, runs, kept)
            events = self.events
            if events.wants("finished"):
                events.finished(name, done)
            if events.wants("settled"):
                for run in done:
                    claim = run.claim
                    events.emit(WorkerEvent("settled", name, claim.id, claim.due_ms))
        self._outage.ok()
        return True

    async def final_flush(self, store: Store) -> None:
        """At shutdown: settle what is left, trying a few times."""
        for tries in range(1, FINAL_SETTLE_TRIES + 1):
            if await self.settle(store):  # waits for a settle in flight, then sends the rest
                return
            await asyncio.sleep(store_backoff(tries))
        log.error(
            "%d outcomes could not be settled; their leases will expire and the tasks run again",
            self.waiting,
        )


#: Outcomes of runs that did not finish: their tasks went back to due as they were.
_HANDED_BACK = ("release", "hold")


def _settled(
    name: str, held: MutableMapping[int, Any], runs: list[Run], kept: list[bool]
) -> list[Run]:
    """The runs settled: each leaves its runner's held ones; those kept, but releases (a run
    handed back did not finish), are returned."""
    done: list[Run] = []
    pop, keep = held.pop, done.append
    for run, ok in zip(runs, kept, strict=True):
        outcome = run.outcome
        assert outcome is not None
        pop(outcome[1][1], None)  # its claim's token
        op = outcome[0]
        if op in _HANDED_BACK:
            continue
        if ok:
            keep(run)
        else:
            log.warning(
                "%s/%s: lease lost before its outcome (%s) was kept; another run supersedes it",
                name,
                outcome[1][0],
                op,
            )
    return done
