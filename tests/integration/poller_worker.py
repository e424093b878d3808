"""A worker process for the poller tests: one poller of concurrency 3 over a table of items.

python -m tests.integration.poller_worker URL NAMESPACE SOURCE_DB LEDGER

The scheduler takes up to ``limit`` items not taken yet from the SQLite file SOURCE_DB and
marks them taken; the handler takes 0.2 s, one at a time in each process. Each process
appends to LEDGER, with the system-wide monotonic clock in ns (comparable across processes
on one host)::

    call  <pid> <start ns> <end ns> <limit> <active count>
    start <instruction> <pid> <ns>
    end   <instruction> <pid> <ns>

With the environment variable POLLER_HANG_MARKER set to a path, the first call of all (the
process that creates that file) writes its pid there and hangs: a test then kills it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import sys
import time

import duetime

CONCURRENCY = 3
HANDLER_SECONDS = 0.2


def main() -> None:
    url, namespace, source, ledger = sys.argv[1:5]
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    app = duetime.App(url, namespace=namespace)
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    pid = os.getpid()
    marker = os.environ.get("POLLER_HANG_MARKER")

    def note(*fields: object) -> None:
        # One write per line, O_APPEND: lines from several processes never interleave.
        os.write(fd, (" ".join(map(str, fields)) + "\n").encode())

    @app.poller("process", concurrency=CONCURRENCY, delay=lambda attempt: 0.05)
    def take_items(ctx: duetime.PollContext) -> list[str]:
        began = time.monotonic_ns()
        if marker and _first(marker):
            os.write(fd, f"hang {pid} {began}\n".encode())
            while True:  # until killed
                time.sleep(1)
        with sqlite3.connect(source, isolation_level=None) as db:
            db.execute("BEGIN IMMEDIATE")
            rows = db.execute(
                "SELECT id FROM items WHERE taken = 0 ORDER BY id LIMIT ?", (ctx.limit,)
            ).fetchall()
            db.executemany("UPDATE items SET taken = 1 WHERE id = ?", rows)
            db.execute("COMMIT")
        time.sleep(0.01)  # a call that takes a while: overlaps would show
        note("call", pid, began, time.monotonic_ns(), ctx.limit, len(ctx.active_instructions))
        return [row[0] for row in rows]

    # One at a time per process: three at once takes all three processes.
    @take_items.handler(concurrency=1)
    async def process(instruction: str) -> None:
        note("start", instruction, pid, time.monotonic_ns())
        await asyncio.sleep(HANDLER_SECONDS)
        note("end", instruction, pid, time.monotonic_ns())

    app.run(grace=5)


def _first(marker: str) -> bool:
    """Whether this is the first call of all the processes (it creates ``marker``)."""
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    return True


if __name__ == "__main__":
    main()
