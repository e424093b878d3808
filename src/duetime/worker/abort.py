"""Finding the runs the store marked to abort (``App.abort``) and aborting them.

Each worker asks the store which of the runs it holds are marked: when woken with a type's
abort signal (:data:`~duetime.stores.base.ABORT_WAKE_MS`), after the wake-up channel
(re)connects, and every third of the lease as a backstop (a signal may be lost). A worker
holding no run asks nothing, and the claim and settle paths do no work for it. How a
marked run ends is :func:`duetime.worker.run.abort_run`'s.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from duetime._outage import OutageLog
from duetime.stores.base import ABORT_WAKE_MS, Store, WakeCallback
from duetime.worker.renewal import renew_interval
from duetime.worker.run import ABORTED_BY_CALL, Run, abort_run
from duetime.worker.runner import TypeRunner

log = logging.getLogger(__name__)


class AbortWatch:
    """Finds the runs of a worker's types that the store marked to abort, and aborts them.

    Args:
        runners: the worker's task types.
        grace: seconds an aborted ``async def`` handler gets to clean up.
        on_wake: the worker's wake-up callback, given the wake-ups that are no abort signal.

    Every type holding runs is looked at as often as leases are renewed, as a backstop.
    """

    def __init__(
        self, runners: Sequence[TypeRunner], grace: float, on_wake: WakeCallback | None = None
    ) -> None:
        self._runners = {r.name: r for r in runners}
        self._grace = grace
        self._on_wake = on_wake
        self._interval = renew_interval(runners)
        self._flagged: set[str] = set()
        self._signal = asyncio.Event()

    def on_wake(self, task_type: str, due_ms: int) -> None:
        """The wake-up callback for the store's ``listen``: a type's abort signal is this
        watch's, any other wake-up goes on to the worker's ``on_wake`` (if any); "look at
        everything" ("*", after the channel connected, when signals may have been lost) is
        both's."""
        if due_ms == ABORT_WAKE_MS:
            if task_type in self._runners:
                self._flagged.add(task_type)
                self._signal.set()
            return
        if task_type == "*":
            self._flagged.update(self._runners)
            self._signal.set()
        if self._on_wake is not None:
            self._on_wake(task_type, due_ms)

    async def loop(self, store: Store) -> None:
        """Look for marked runs on each signal, and every interval, until cancelled."""
        outage = OutageLog("abort checks", log)
        while True:
            try:
                async with asyncio.timeout(self._interval):
                    await self._signal.wait()
            except TimeoutError:
                self._flagged.update(self._runners)
            self._signal.clear()
            names, self._flagged = self._flagged, set()
            for name in names:
                try:
                    await self.check(store, self._runners[name])
                except Exception as exc:  # a worker outlives any failure of its store
                    outage.failed(exc, "looking for aborted runs failed (%s)", exc)
                    self._flagged.add(name)  # looked at again at the next interval
                else:
                    outage.ok()

    async def check(self, store: Store, runner: TypeRunner) -> None:
        """Abort the runs of ``runner`` that the store marked (one call; none when it holds
        no run that still runs)."""
        held = {r.claim.token: r for r in runner.active.values() if _abortable(r)}
        if not held:
            return
        marked = await store.aborting(runner.name, [r.claim for r in held.values()])
        interruptible = runner.task_type.is_async
        for claim in marked:
            run = held.get(claim.token)
            if run is not None and abort_run(
                run, ABORTED_BY_CALL, interruptible=interruptible, grace=self._grace
            ):
                log.warning(
                    "%s/%s: aborted (App.abort)%s",
                    runner.name,
                    claim.id,
                    ""
                    if interruptible
                    else "; its plain def handler runs on in its thread "
                    "and its result will be discarded",
                )


def _abortable(run: Run) -> bool:
    return run.aborted is None and not run.finished
