"""The worker process bench/expiry.py starts for W6: one expiring group, a recording handler.

The handler records, for each expiry, its start time (this process's ``time.time()``), the
entry's expiry (``ctx.due``, as epoch seconds) and the key, in memory. When ``--n`` expiries
have been handled, or on SIGTERM (the benchmark's deadline), it stops the worker and writes
them to ``--out`` as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from worker_proc import run, serve_until  # bench/, first on the path of a script run here

import duetime


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--group", default="w6")
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--concurrency", type=int, default=1000)
    args = parser.parse_args()
    started = time.time()

    app = duetime.App(args.url, namespace=args.namespace)
    cache = app.expiring(
        args.group, ttl=timedelta(seconds=30), concurrency=args.concurrency, timeout=None
    )
    samples: list[tuple[float, float, str]] = []
    done = asyncio.Event()

    @cache.on_expire
    async def handler(key: str, value: Any, ctx: duetime.Context) -> None:
        samples.append((time.time(), ctx.due.timestamp(), key))
        if len(samples) >= args.n:
            done.set()

    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, done.set)
    await serve_until(app, done, args.out, {"started": started, "samples": samples})


if __name__ == "__main__":
    run(main)
