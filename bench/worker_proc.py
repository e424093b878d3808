"""The worker process the benchmark starts: runs one task type with a no-op recording handler.

It records each handler's start time and the task's due time (from the payload) in memory,
and writes them to ``--out`` as JSON when ``--n`` tasks have run, then exits.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import duetime
from duetime.worker.runtime import tune_gc


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--concurrency", type=int, default=1000)
    parser.add_argument(
        "--crons",
        type=int,
        default=0,
        help="add this many every-second cron schedules; record their ticks",
    )
    parser.add_argument(
        "--metrics", action="store_true", help="serve Prometheus metrics (on a free port)"
    )
    args = parser.parse_args()
    started = time.time()

    app = duetime.App(args.url, namespace=args.namespace)
    samples: list[tuple[float, float]] = []
    cpu: list[float] = []  # the process's CPU seconds at the first and the last handler
    done = asyncio.Event()

    @app.task("bench", concurrency=args.concurrency, timeout=None)
    async def bench(payload: dict[str, float], ctx: duetime.Context) -> None:
        due = payload["due"] if "due" in payload else ctx.due.timestamp()
        samples.append((time.time(), due))
        if len(samples) == 1 or len(samples) == args.n:
            cpu.append(time.process_time())
        if len(samples) >= args.n:
            done.set()

    for n in range(args.crons):
        await app.add_cron(
            f"c{n}",
            "* * * * * *",
            task="bench",
        )

    result = {"started": started, "samples": samples, "cpu": cpu}
    await serve_until(app, done, args.out, result, metrics=args.metrics)


async def serve_until(
    app: duetime.App, done: asyncio.Event, out: str, result: object, *, metrics: bool = False
) -> None:
    """Run a worker of ``app`` (writing ``<out>.ready`` once it started) until ``done`` is
    set, then write ``result`` to ``out`` as JSON. With ``metrics``, the worker serves
    Prometheus metrics on a free port."""
    worker = app.worker(grace=1, metrics_port=0 if metrics else None)
    tune_gc()  # as app.run() and `duetime worker` do
    runner = asyncio.create_task(worker.run())
    await worker.started.wait()
    Path(out + ".ready").write_text(str(time.time()))  # noqa: ASYNC240 - once, tiny
    await done.wait()
    # Let the last outcomes settle before stopping, as a real worker would.
    await asyncio.sleep(0.2)
    worker.stop()
    await runner
    await app.close()
    Path(out).write_text(json.dumps(result))  # noqa: ASYNC240


def run(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run ``main`` in the event loop a worker process uses (uvloop when installed)."""
    from duetime.worker.runtime import event_loop_factory

    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        runner.run(main())


if __name__ == "__main__":
    run(main)
