"""The worker process of bench/pollers.py: one poller whose scheduler hands out instructions
from an in-memory counter, and a handler that records when each one starts and ends.

The scheduler returns ``ctx.limit`` fresh instructions (``i0``, ``i1``, ...) a call until
``--n`` were handed out. The handler does nothing but note, in memory, ``perf_counter()``
as it starts and just before it returns (``--hold-ms`` makes it wait a random 0 to that
many ms in between). When ``--n`` handlers have returned, the worker stops and writes the
times to ``--out`` as JSON: epoch seconds for the marks the benchmark compares with its own
clock, and per instruction the start and end in ``perf_counter`` seconds (one process, one
clock).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from pollers_trace import Trace  # bench/, first on the path of a script run here
from worker_proc import run, serve_until

import duetime

NAME = "w7"


class Recorder:
    """The scheduler's counter and the handlers' times."""

    def __init__(self, n: int, hold_ms: float, started: float, trace: Trace | None) -> None:
        self.n = n
        self.trace = trace
        self.started = started
        self.result: dict[str, Any] = {}  # filled as the last handler returns
        self.hold_s = hold_ms / 1000
        self.handed = 0
        self.calls: list[tuple[float, int, int]] = []  # (perf_counter, limit, returned)
        self.first_handout = 0.0  # epoch seconds
        self.start = [0.0] * n
        self.end = [0.0] * n
        self.ended = 0
        self.done = asyncio.Event()

    async def schedule(self, ctx: duetime.PollContext) -> list[str]:
        count = min(ctx.limit, self.n - self.handed)
        first = self.handed
        self.handed += count
        self.calls.append((time.perf_counter(), ctx.limit, count))
        if self.trace is not None:
            self.trace.mark("scheduler", "")
        if count and not first:
            self.first_handout = time.time()
        return [f"i{i}" for i in range(first, first + count)]

    async def handle(self, instruction: str) -> None:
        i = int(instruction[1:])
        self.start[i] = time.perf_counter()
        if self.hold_s:
            await asyncio.sleep(random.uniform(0, self.hold_s))
        self.end[i] = time.perf_counter()
        self.ended += 1
        if self.ended >= self.n:
            self.result.update(self.times())
            self.done.set()

    def times(self) -> dict[str, Any]:
        # One pair of readings ties perf_counter to epoch seconds for the first and last.
        offset = time.time() - time.perf_counter()
        return {
            "started": self.started,
            "first_handout": self.first_handout,
            "first_start": min(self.start) + offset,
            "last_end": max(self.end) + offset,
            "start": self.start,
            "end": self.end,
            "calls": self.calls,
            "marks": self.trace.marks if self.trace is not None else [],
        }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--concurrency", type=int, default=1000)
    parser.add_argument(
        "--handler-concurrency",
        type=int,
        default=1000,
        help="the handler's task type's concurrency in this worker",
    )
    parser.add_argument("--hold-ms", type=float, default=0.0)
    parser.add_argument("--out", required=True)
    parser.add_argument("--trace", action="store_true", help="record a timeline of the path")
    args = parser.parse_args()
    started = time.time()

    app = duetime.App(args.url, namespace=args.namespace)
    trace = Trace(NAME) if args.trace else None
    recorder = Recorder(args.n, args.hold_ms, started, trace)
    poller = app.poller(NAME, concurrency=args.concurrency)(recorder.schedule)
    # The poller's concurrency is the limit that counts; the type's in this worker is set
    # above it, so that a full type does not claim again (and find nothing) each time a
    # handler ends. No time limit: the handler is awaited as it is (as W2's).
    poller.handler(concurrency=args.handler_concurrency, timeout=None)(recorder.handle)
    if trace is not None:
        trace.wrap_store(await app.open())
    await serve_until(app, recorder.done, args.out, recorder.result)


if __name__ == "__main__":
    run(main)
