"""A worker process for the poller fencing test: one poller of concurrency 5, whose first
call of all stops a while inside the scheduler, so that a test can freeze it there.

python -m tests.faults.fenced_poller URL NAMESPACE LEDGER

The first call of all the processes (the one that creates ``LEDGER.inside``) notes
``inside`` and sleeps PAUSE_SECONDS before it returns. Each process's first call that
returns anything returns ``concurrency`` new instructions, ``<pid>-<n>``; its later calls
return none. Each handler takes HANDLER_SECONDS. Every line goes to LEDGER, with the
system-wide monotonic clock in ns (comparable across processes on one host)::

    inside <pid> <ns>
    call   <pid> <start ns> <end ns> <instructions returned>
    start  <instruction> <pid> <ns>
    end    <instruction> <pid> <ns>
    error  <pid> <ns> <class of the error event's error>
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time

import duetime

CONCURRENCY = 5
#: The poller's lease: a freeze longer than this hands its call to the other worker.
LEASE_SECONDS = 2.0
#: How long the first call stays inside the scheduler, for the test to freeze it there.
PAUSE_SECONDS = 2.0
#: Long enough for the instructions of both calls to overlap if both were dispatched.
HANDLER_SECONDS = 3.0


def main() -> None:
    url, namespace, ledger = sys.argv[1:4]
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    app = duetime.App(url, namespace=namespace)
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    pid = os.getpid()
    produced = False

    def note(*fields: object) -> None:
        # One write per line, O_APPEND: lines from several processes never interleave.
        os.write(fd, (" ".join(map(str, fields)) + "\n").encode())

    @app.poller("fenced", concurrency=CONCURRENCY, delay=lambda attempt: 0.05, lease=LEASE_SECONDS)
    def find(ctx: duetime.PollContext) -> list[str]:
        nonlocal produced
        began = time.monotonic_ns()
        if _first(ledger + ".inside"):
            note("inside", pid, began)
            time.sleep(PAUSE_SECONDS)  # frozen here by the test, for longer than the lease
        found = [] if produced else [f"{pid}-{n}" for n in range(ctx.limit)]
        produced = produced or bool(found)
        note("call", pid, began, time.monotonic_ns(), len(found))
        return found

    @find.handler
    async def work(instruction: str) -> None:
        note("start", instruction, pid, time.monotonic_ns())
        await asyncio.sleep(HANDLER_SECONDS)
        note("end", instruction, pid, time.monotonic_ns())

    def on_error(event: duetime.ErrorEvent) -> None:
        note("error", pid, time.monotonic_ns(), type(event.error).__name__)

    app.events.on("error", on_error)
    app.run(grace=HANDLER_SECONDS + 2)


def _first(marker: str) -> bool:
    """Whether this is the first call of all the processes (it creates ``marker``)."""
    try:
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except FileExistsError:
        return False
    return True


if __name__ == "__main__":
    main()
