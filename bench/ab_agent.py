"""bench/ab.py's agent: the producer or worker process, run by a build's own interpreter.

``bench/ab.py`` runs this file with each revision's venv python (``python -I``: no
PYTHONPATH, no script directory, so ``import duetime`` is the revision's installed
package), so that both revisions run the same measuring code. It uses only calls that
every measured revision has (``App(url, namespace=...)``, ``declare``, ``@app.task``,
``schedule``, ``schedule_many``, ``Task``, ``worker()``, ``Worker.started``/``stop``/
``run``), and imports nothing from this repository.

    agent.py w1 URL NS N             one ``schedule`` call per task: JSON on stdout
    agent.py seed URL NS N [LEVELS [GROUPS]]  N tasks due now, with one ``schedule_many``
                                     (LEVELS: task i of priority 10 * (i % LEVELS), which
                                     needs a revision with priorities; GROUPS: task i in
                                     group ``g<i % GROUPS>``, a revision with groups)
    agent.py spread URL NS N SPREAD LEAD   one call per task, due over SPREAD s from LEAD s on
    agent.py worker URL NS N OUT CONCURRENCY [OPTIONS]   run N tasks, write their times to OUT
                                     (OPTIONS: more task options of the type, as JSON;
                                     "monitored": false runs the worker unmonitored,
                                     "sync": true gives it a plain def handler)
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import resource
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duetime

# bench/bench.py's payload: about 100 bytes of JSON, carrying the task's own due time.
PAD = "x" * (100 - len(json.dumps({"i": 10000, "due": 1764400000.123456, "pad": ""})))


def payload(i: int, due: float) -> dict[str, Any]:
    return {"i": i, "due": round(due, 6), "pad": PAD}


def app_for(url: str, ns: str) -> duetime.App:
    app = duetime.App(url, namespace=ns)
    app.declare("bench")
    return app


def runtime() -> tuple[str, Callable[[], None] | None, Callable[[], Any] | None]:
    """Where the revision keeps the worker process's set-up (it moved between revisions):
    its module's name, ``tune_gc`` and ``event_loop_factory``, as ``app.run()`` uses them."""
    for module in ("duetime.worker.runtime", "duetime.runtime"):
        try:
            mod = __import__(module, fromlist=["tune_gc"])
        except ImportError:
            continue
        return module, getattr(mod, "tune_gc", None), getattr(mod, "event_loop_factory", None)
    return "", None, None


async def w1(url: str, ns: str, n: int) -> dict[str, Any]:
    app = app_for(url, ns)
    await app.open()
    due = datetime.now(UTC) + timedelta(hours=1)
    due_s = due.timestamp()
    t0 = time.perf_counter()
    for i in range(n):
        await app.schedule("bench", f"t{i}", at=due, payload=payload(i, due_s))
    elapsed = time.perf_counter() - t0
    await app.close()
    return {"per_s": n / elapsed}


async def w1m(url: str, ns: str, n: int) -> dict[str, Any]:
    """W1m: ``n`` merges (``if_exists="merge"``), each into a task pending an hour away,
    one call each, after the tasks are written in one batch (not timed)."""
    app = app_for(url, ns)
    await app.open()
    due = datetime.now(UTC) + timedelta(hours=1)
    due_s = due.timestamp()
    await app.schedule_many(
        duetime.Task("bench", f"t{i}", at=due, payload=payload(i, due_s)) for i in range(n)
    )
    t0 = time.perf_counter()
    for i in range(n):
        await app.schedule("bench", f"t{i}", payload={"merged": i}, if_exists="merge")
    elapsed = time.perf_counter() - t0
    await app.close()
    return {"per_s": n / elapsed}


async def seed(url: str, ns: str, n: int, levels: int = 0, groups: int = 0) -> dict[str, Any]:
    app = app_for(url, ns)
    now = time.time()
    due = datetime.fromtimestamp(now - 1, UTC)
    if levels or groups:  # only then: a revision without either is seeded as it always was
        extra: list[dict[str, Any]] = [{} for _ in range(n)]
        for i in range(n):
            if levels:
                extra[i]["priority"] = 10 * (i % levels)
            if groups:
                extra[i]["group"] = f"g{i % groups}"
        await app.schedule_many(
            duetime.Task("bench", f"t{i}", at=due, payload=payload(i, now - 1), **extra[i])
            for i in range(n)
        )
    else:
        await app.schedule_many(
            duetime.Task("bench", f"t{i}", at=due, payload=payload(i, now - 1)) for i in range(n)
        )
    await app.close()
    return {}


async def spread(url: str, ns: str, n: int, seconds: float, lead: float) -> dict[str, Any]:
    app = app_for(url, ns)
    await app.open()
    start = time.time() + lead
    overran = -lead
    for i in range(n):
        due = start + seconds * i / n
        await app.schedule(
            "bench", f"t{i}", at=datetime.fromtimestamp(due, UTC), payload=payload(i, due)
        )
        overran = max(overran, time.time() - due)
    await app.close()
    # Above 0, some task was scheduled after it was due, and its lateness includes that.
    return {"overran_s": overran}


def cpu() -> list[float]:
    """The process's user and system CPU seconds so far (all its threads)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return [usage.ru_utime, usage.ru_stime]


async def worker(
    url: str, ns: str, n: int, out: str, concurrency: int, options: dict[str, Any]
) -> None:
    """Run a worker until ``n`` tasks ran; write each handler's start and due time, and
    the CPU times at the first and the last handler, to ``out``. With env
    ``DUETIME_AB_SAMPLES=0`` (a counted run: bench/ab_count.py) no handler keeps a sample,
    so that what is counted per task is the worker's alone, not the samples' writing."""
    started = time.time()
    module, tune_gc, _ = runtime()
    app = duetime.App(url, namespace=ns)
    keep = os.environ.get("DUETIME_AB_SAMPLES", "1") != "0"
    samples: list[tuple[float, float]] = []
    cpus: list[list[float]] = []
    done = asyncio.Event()
    ran = 0

    options = dict(options)
    monitored = options.pop("monitored", True)  # a worker option, not the type's
    # "sync": true gives the type a plain ``def`` handler (run in the worker's threads,
    # the general path of worker/executor.py) instead of the no-op ``async def`` one.
    sync = options.pop("sync", False)
    loop = asyncio.get_running_loop()
    counting = threading.Lock()

    def ran_one(due: float) -> None:
        nonlocal ran
        with counting:
            ran += 1
            if keep:
                samples.append((time.time(), due))
            if ran == 1 or ran == n:
                cpus.append(cpu())
            if ran >= n:
                loop.call_soon_threadsafe(done.set)

    register = app.task("bench", concurrency=concurrency, timeout=None, **options)
    if sync:

        @register
        def bench_sync(payload: dict[str, float]) -> None:
            ran_one(payload["due"])

    else:

        @register
        async def bench(payload: dict[str, float]) -> None:
            ran_one(payload["due"])

    run = app.worker(grace=1) if monitored else app.worker(grace=1, monitored=False)
    if tune_gc is not None:
        tune_gc()  # as app.run() does
    else:
        gc.collect()
    runner = asyncio.create_task(run.run())
    await run.started.wait()
    Path(out + ".ready").write_text(str(time.time()))  # noqa: ASYNC240 - once, tiny
    await done.wait()
    await asyncio.sleep(0.2)  # let the last outcomes settle, as a real worker would
    run.stop()
    await runner
    await app.close()
    result = {
        "started": started,
        "samples": samples,
        "cpu": cpus,
        "runtime": module,
        "duetime": duetime.__file__,
    }
    Path(out).write_text(json.dumps(result))  # noqa: ASYNC240


def main(argv: list[str]) -> None:
    command, url, ns, n = argv[0], argv[1], argv[2], int(argv[3])
    if command == "worker":
        _, _, factory = runtime()
        loop_factory = factory() if factory is not None else None
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            options = json.loads(argv[6]) if len(argv) > 6 else {}
            runner.run(worker(url, ns, n, argv[4], int(argv[5]), options))
        return
    if command == "w1":
        result = asyncio.run(w1(url, ns, n))
    elif command == "w1m":
        result = asyncio.run(w1m(url, ns, n))
    elif command == "seed":
        counts = [int(arg) for arg in argv[4:6]]
        result = asyncio.run(seed(url, ns, n, *counts))
    elif command == "spread":
        result = asyncio.run(spread(url, ns, n, float(argv[4]), float(argv[5])))
    else:
        raise SystemExit(f"unknown command {command!r}")
    print(json.dumps({**result, "duetime": duetime.__file__}))


if __name__ == "__main__":
    main(sys.argv[1:])
