"""A worker process for the abort tests: ``python -m tests.contract.abort_worker URL
NAMESPACE LEDGER``.

Two task types. ``slow`` (async) writes ``start`` and sleeps a minute; cancelled, it writes
``cleanup`` and ends. ``blocking`` (a plain def, in a thread) writes ``start``, sleeps
``payload["seconds"]`` and writes ``end``. Each line is ``<what> <task id> <pid> <wall
ms>``, one ``os.write`` on an ``O_APPEND`` descriptor (lines of several processes never
interleave).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from typing import Any

import duetime


def wall_ms() -> float:
    return time.clock_gettime_ns(time.CLOCK_REALTIME) / 1e6


def main() -> None:
    url, namespace, ledger = sys.argv[1:4]
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    app = duetime.App(url, namespace=namespace)
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def note(what: str, ctx: duetime.Context) -> None:
        os.write(fd, f"{what} {ctx.task_id} {os.getpid()} {wall_ms()}\n".encode())

    @app.task("slow", retries=3)
    async def slow(payload: dict[str, Any], ctx: duetime.Context) -> None:
        note("start", ctx)
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            note("cleanup", ctx)
            raise

    @app.task("blocking", retries=3)
    def blocking(payload: dict[str, Any], ctx: duetime.Context) -> None:
        note("start", ctx)
        time.sleep(payload["seconds"])
        note("end", ctx)

    app.run(grace=5)


if __name__ == "__main__":
    main()
