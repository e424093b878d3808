"""Running a worker as a process: the event loop, the garbage collector, and SIGTERM/SIGINT
for a graceful stop."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
from collections.abc import Callable

from duetime.worker.worker import Worker

log = logging.getLogger(__name__)


async def serve_until_signalled(worker: Worker) -> None:
    """Run ``worker``; the first SIGTERM or SIGINT stops it gracefully, a second one at once."""
    loop = asyncio.get_running_loop()
    signals = (signal.SIGTERM, signal.SIGINT)
    stops = 0

    def on_signal(signum: int) -> None:
        nonlocal stops
        stops += 1
        if stops == 1:
            log.info(
                "%s: stopping; running handlers get %.0f s to finish (%s stops at once)",
                signal.Signals(signum).name,
                worker.grace,
                "a second Ctrl-C" if signum == signal.SIGINT else "a second SIGTERM or Ctrl-C",
            )
            worker.stop()
        else:
            log.warning("%s again: stopping now", signal.Signals(signum).name)
            worker.stop(now=True)

    for signum in signals:
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        await worker.run()
    finally:
        for signum in signals:
            loop.remove_signal_handler(signum)
        await worker.app.close()


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when it is installed (it runs a busy worker markedly faster:
    docs/performance.md), else None for asyncio's own."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


#: The fewest allocations between two young-generation collections in a worker process.
GC_YOUNG_THRESHOLD = 10_000


def tune_gc() -> None:
    """Make the garbage collector cheaper for a worker process that has finished starting.

    Python's collector runs every 700 allocations and, in its older generations, walks
    every object the process has, modules and classes included. A worker allocates a few
    short-lived objects per task, so at high rates the collector takes a large share of
    the worker's time (docs/performance.md). Two standard remedies: freeze what
    exists now (the imported code, the app) so that collections skip it, and collect the
    young generation every 10,000 allocations instead of 700. Cycles are still collected.
    """
    gc.freeze()
    young, middle, old = gc.get_threshold()
    if young:  # 0 means the process turned automatic collection off: leave it so
        gc.set_threshold(max(young, GC_YOUNG_THRESHOLD), middle, old)


def run_worker(worker: Worker, *, gc_tuning: bool = True) -> None:
    """Run ``worker`` in a new event loop until a signal stops it.

    With ``gc_tuning`` (the default) the process's garbage collector is tuned for a
    worker first: see :func:`tune_gc`.
    """
    if gc_tuning:
        tune_gc()
    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        runner.run(serve_until_signalled(worker))
