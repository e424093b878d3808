"""The subscriber process bench/expiry.py starts for W6's source-design run.

It subscribes to ``__keyevent@0__:expired`` and, for each ``reminder:<key>`` event, records
the time it received the event (this process's ``time.time()``), then takes the entry with
``GETDEL data:<key>`` and reads the intended expiry from the value (JSON with ``"due"`` in
epoch seconds). Each GETDEL runs in a task of its own, so that one round trip does not hold
up the next event, as an event handler in the shadow-key design runs; a burst waits for one of
100 connections. When ``--n`` entries have been taken, or on SIGTERM (the benchmark's
deadline), it writes ``(received, intended expiry, key)`` for each to ``--out`` as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import redis.asyncio as aredis

CHANNEL = "__keyevent@0__:expired"
PREFIX = "reminder:"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    started = time.time()

    # A burst of events waits for a connection rather than failing (redis-py's pool has 100).
    pool = aredis.BlockingConnectionPool.from_url(args.url, max_connections=100, timeout=None)
    client = aredis.Redis(connection_pool=pool)
    pubsub = client.pubsub()
    await pubsub.subscribe(CHANNEL)
    while True:  # the subscription is in place once Redis confirms it
        message = await pubsub.get_message(timeout=5)
        if message is not None and message["type"] == "subscribe":
            break

    samples: list[tuple[float, float, str]] = []
    events = 0
    done = asyncio.Event()
    pending: set[asyncio.Task[None]] = set()

    async def take(received: float, key: str) -> None:
        raw = await client.getdel("data:" + key)
        if raw is None:  # taken already: a second event for one key
            return
        samples.append((received, json.loads(raw)["due"], key))
        if len(samples) >= args.n:
            done.set()

    async def listen() -> None:
        nonlocal events
        while True:
            message = await pubsub.get_message(timeout=None)
            if message is None or message["type"] != "message":
                continue
            received = time.time()
            events += 1
            name = message["data"].decode()
            if name.startswith(PREFIX):
                task = asyncio.create_task(take(received, name[len(PREFIX) :]))
                pending.add(task)
                task.add_done_callback(pending.discard)

    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, done.set)
    listener = asyncio.create_task(listen())
    Path(args.out + ".ready").write_text(str(time.time()))  # noqa: ASYNC240 - once, tiny
    await done.wait()
    listener.cancel()
    await asyncio.gather(listener, *pending, return_exceptions=True)
    await pubsub.aclose()
    await client.aclose()
    await pool.aclose()
    result = {"started": started, "events": events, "samples": samples}
    Path(args.out).write_text(json.dumps(result))  # noqa: ASYNC240


if __name__ == "__main__":
    from duetime.worker.runtime import event_loop_factory

    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        runner.run(main())
