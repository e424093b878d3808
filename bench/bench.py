"""duetime's benchmark: the peer harness's four workloads, on this machine.

    python bench/bench.py                      # Redis (its own redis-server) and SQLite
    python bench/bench.py --stores redis --runs 3
    python bench/bench.py --stores postgres    # the PostgreSQL at --postgres-url

W1  tasks scheduled per second: one ``schedule`` call per task, and ``schedule_many``;
    for Redis also a bare redis-py loop of single ZADDs, for the ratio, run in blocks
    that alternate with duetime's calls.
W2  tasks fired per second by one worker process: N due tasks, a no-op async handler,
    timed from the worker process's start to the last handler (and first to last), and
    the worker process's CPU time per task (first to last). --metrics: the worker serves
    Prometheus metrics, to measure what they cost.
W3  lateness (handler start minus due time): 2,000 tasks spread over 10 s, p50/p99/max.
W4  store bytes per pending task with a ~100-byte payload (Redis used_memory growth), and
    per run kept in the run history (the type's history stream, MEMORY USAGE), for runs
    settled in batches (a busy worker) and one by one (a worker with one run at a time).
W5  cron lateness (handler start minus tick): 20 every-second schedules for 30 s (600
    ticks, 20 at each second); --w5-schedules 200 makes a burst of 200 ticks a second.

Redis runs as a redis-server this script starts on a free port (no persistence, like the
peer harness), never the machine's shared one. PostgreSQL is the server at
``--postgres-url`` (the local one by default), each run in a schema of its own, dropped
at the end. The worker processes start from compiled
bytecode, as an installed package does: the script compiles ``src/`` first, since
PYTHONDONTWRITEBYTECODE (set on some machines) would otherwise have every worker compile
duetime anew.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

import redis.asyncio as aredis  # noqa: E402
from tests.servers import RedisServer  # noqa: E402

import duetime  # noqa: E402

# The peer harness's payload: 100 bytes as json.dumps writes it (94 as duetime stores it).
PAD = "x" * (100 - len(json.dumps({"i": 10000, "due": 1764400000.123456, "pad": ""})))


def payload(i: int, due: float) -> dict[str, object]:
    """About 100 bytes of JSON, carrying its own due time, as the peer harness's."""
    return {"i": i, "due": round(due, 6), "pad": PAD}


def app_for(url: str, ns: str) -> duetime.App:
    app = duetime.App(url, namespace=ns)
    app.declare("bench")
    return app


#: W1 runs duetime's calls and the bare ZADDs in alternating blocks of this many, so that
#: the machine's ups and downs fall on both alike and the ratio compares like with like.
W1_BLOCK = 500


async def w1(url: str, n: int) -> dict[str, float]:
    out: dict[str, float] = {}
    app = app_for(url, "w1" + uuid.uuid4().hex[:8])
    due = datetime.now(UTC) + timedelta(hours=1)
    due_s = due.timestamp()
    await app.open()
    bare: aredis.Redis | None = aredis.Redis.from_url(url) if url.startswith("redis") else None
    bare_key = "bare:" + uuid.uuid4().hex
    score = time.time() * 1000 + 3_600_000
    single = bare_zadd = 0.0
    for start in range(0, n, W1_BLOCK):
        block = range(start, min(start + W1_BLOCK, n))
        t0 = time.perf_counter()
        for i in block:
            await app.schedule("bench", f"t{i}", at=due, payload=payload(i, due_s))
        single += time.perf_counter() - t0
        if bare is not None:
            t0 = time.perf_counter()
            for i in block:
                await bare.zadd(bare_key, {f"t{i}": score})
            bare_zadd += time.perf_counter() - t0
    out["single_per_s"] = n / single
    if bare is not None:
        out["bare_zadd_per_s"] = n / bare_zadd
        out["single_vs_bare"] = bare_zadd / single
        await bare.delete(bare_key)
        await bare.aclose()
    tasks = [duetime.Task("bench", f"m{i}", at=due, payload=payload(i, due_s)) for i in range(n)]
    t0 = time.perf_counter()
    await app.schedule_many(tasks)
    out["many_per_s"] = n / (time.perf_counter() - t0)
    await app.close()
    return out


CONCURRENCY = 1000
METRICS = False  # whether the worker processes serve Prometheus metrics (--metrics)


def start_worker(url: str, ns: str, n: int, out: Path, crons: int = 0) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable,
        str(ROOT / "bench" / "worker_proc.py"),
        "--url",
        url,
        "--namespace",
        ns,
        "--n",
        str(n),
        "--out",
        str(out),
        "--concurrency",
        str(CONCURRENCY),
        "--crons",
        str(crons),
    ]
    return subprocess.Popen(cmd + (["--metrics"] if METRICS else []))


def wait_file(path: Path, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None and not path.exists():
            raise RuntimeError(f"worker exited with {proc.returncode}")
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"timed out waiting for {path.name}")
        time.sleep(0.01)


async def w2(url: str, n: int, tmp: Path) -> dict[str, float]:
    ns = "w2" + uuid.uuid4().hex[:8]
    app = app_for(url, ns)
    now = time.time()
    due = datetime.now(UTC) - timedelta(seconds=1)
    await app.schedule_many(
        duetime.Task("bench", f"t{i}", at=due, payload=payload(i, now - 1)) for i in range(n)
    )
    await app.close()
    out = tmp / f"{ns}.json"
    proc = start_worker(url, ns, n, out)
    t_start = time.time()
    wait_file(out, proc, 600)
    proc.wait()
    data = json.loads(out.read_text())
    times = [s[0] for s in data["samples"]]
    first, last = min(times), max(times)
    return {
        "n": n,
        "start_to_last_per_s": n / (last - t_start),
        "first_to_last_per_s": n / (last - first) if last > first else float("inf"),
        "startup_s": first - t_start,
        # The worker process's CPU per task, first to last handler: steadier than the
        # rates on a machine shared with other work.
        "cpu_us_per_task": (data["cpu"][-1] - data["cpu"][0]) / max(n - 1, 1) * 1e6,
    }


async def w3(url: str, n: int, spread: float, tmp: Path) -> dict[str, float]:
    ns = "w3" + uuid.uuid4().hex[:8]
    out = tmp / f"{ns}.json"
    proc = start_worker(url, ns, n, out)
    wait_file(Path(str(out) + ".ready"), proc, 60)
    app = app_for(url, ns)
    await app.open()
    start = time.time() + 2.0
    for i in range(n):
        due = start + spread * i / n
        await app.schedule(
            "bench", f"t{i}", at=datetime.fromtimestamp(due, UTC), payload=payload(i, due)
        )
    await app.close()
    wait_file(out, proc, spread + 60)
    proc.wait()
    return lateness(out)


def lateness(out: Path) -> dict[str, float]:
    """p50/p99/max/min of handler start minus due time, in ms, from a worker's samples."""
    data = json.loads(out.read_text())
    late = sorted((t - d) * 1000 for t, d in data["samples"])
    return {
        "n": len(late),
        "p50_ms": statistics.median(late),
        "p99_ms": late[int(len(late) * 0.99) - 1],
        "max_ms": late[-1],
        "min_ms": late[0],
    }


async def w5(url: str, schedules: int, seconds: int, tmp: Path) -> dict[str, float]:
    """Cron lateness: handler start minus tick, for `schedules` every-second schedules."""
    ns = "w5" + uuid.uuid4().hex[:8]
    out = tmp / f"{ns}.json"
    proc = start_worker(url, ns, schedules * seconds, out, crons=schedules)
    wait_file(out, proc, seconds + 60)
    proc.wait()
    return {"schedules": schedules, **lateness(out)}


async def w4(url: str, n: int) -> dict[str, float]:
    """Bytes per pending task under three kinds of id: short ones of the caller's
    ("task-000001"), 32-character uuid hex of the caller's, and the 12-character ids
    ``App.submit`` picks. One call per task, as the peer harness measures after its W1.

    A warm-up call comes first: Redis allocates a latency histogram (about 25 KB) for each
    command the first time any client runs it, about 230 KB for the commands duetime's
    scripts use. That is once per server, not per task; measured in the first 20,000
    tasks it would add about 11 B to each."""
    client = aredis.Redis.from_url(url)
    results = {}
    warm = app_for(url, "w4warm")
    async with warm:
        await warm.submit("bench", delay=timedelta(hours=1), payload=payload(0, 0.0))
        await warm.schedule("bench", "warm", delay=timedelta(hours=1), payload=payload(0, 0.0))
    for label in ("short_ids", "uuid_ids", "submit_ids"):
        ns = "w4" + uuid.uuid4().hex[:8]
        app = app_for(url, ns)
        await app.open()
        before = (await client.info("memory"))["used_memory"]
        due = datetime.now(UTC) + timedelta(hours=1)
        due_s = due.timestamp()
        for i in range(n):
            if label == "submit_ids":
                await app.submit("bench", at=due, payload=payload(i, due_s))
            else:
                task_id = f"task-{i:06d}" if label == "short_ids" else uuid.uuid4().hex
                await app.schedule("bench", task_id, at=due, payload=payload(i, due_s))
        after = (await client.info("memory"))["used_memory"]
        results[f"{label}_bytes_per_task"] = (after - before) / n
        await app.close()
    await client.aclose()
    return results


async def w4_runs(url: str, n: int) -> dict[str, float]:
    """Bytes per run in the run history: ``n`` plain completions of tasks with short ids
    ("task-000001"), all due at once (settled in batches, as a busy worker settles) and one
    at a time (concurrency 1, tasks due a millisecond apart: settles of one or two runs),
    the type keeping them all; the history stream and its tally, by MEMORY USAGE."""
    return {
        f"runs_{label}_bytes_per_run": await _bytes_per_run(url, n, concurrency)
        for label, concurrency in (("batched", 1000), ("one_by_one", 1))
    }


async def _bytes_per_run(url: str, n: int, concurrency: int) -> float:
    ns = "w4r" + uuid.uuid4().hex[:8]
    app = duetime.App(url, namespace=ns, history=duetime.History(keep=n))
    ran = asyncio.Event()
    count = 0

    @app.task("bench", concurrency=concurrency, timeout=None)
    async def bench(payload: dict[str, object]) -> None:
        nonlocal count
        count += 1
        if count == n:
            ran.set()

    now = datetime.now(UTC)
    step = timedelta(milliseconds=0 if concurrency > 1 else 1)
    await app.schedule_many(
        duetime.Task("bench", f"task-{i:06d}", at=now + i * step, payload=payload(i, 0.0))
        for i in range(n)
    )
    worker = app.worker(monitored=False)
    running = asyncio.create_task(worker.run())
    await ran.wait()
    await asyncio.sleep(0.5)  # the last settles
    worker.stop()
    await running
    kept = len(await app.history("bench", limit=n))
    client = aredis.Redis.from_url(url)
    size = 0
    for kind in ("runs", "tally"):
        size += await client.memory_usage(f"duetime:{{{ns}:bench}}:{kind}", samples=0) or 0
    await client.aclose()
    await app.close()
    return size / kept


async def run_store(name: str, url: str, args: argparse.Namespace, tmp: Path) -> dict[str, object]:
    result: dict[str, object] = {"store": name}
    if "w1" in args.workloads:
        result["w1"] = await w1(url, args.w1_n)
    if "w2" in args.workloads:
        result["w2"] = await w2(url, args.w2_n, tmp)
    if "w3" in args.workloads:
        result["w3"] = await w3(url, args.w3_n, args.w3_spread, tmp)
    if "w4" in args.workloads and name == "redis":
        # A server of its own: keys other workloads left with a TTL (claim replies and
        # schedule markers live up to a minute) would expire during it and skew the count.
        with RedisServer() as server:
            pending = await w4(server.url, args.w4_n)
            result["w4"] = {**pending, **await w4_runs(server.url, args.w4_runs_n)}
    if "w5" in args.workloads:
        result["w5"] = await w5(url, args.w5_schedules, args.w5_seconds, tmp)
    return result


def run_postgres(args: argparse.Namespace, tmp: Path) -> dict[str, object]:
    """The workloads in a schema of their own, dropped afterwards."""
    import psycopg
    from psycopg import sql

    schema = f"bench_{uuid.uuid4().hex[:8]}"
    sep = "&" if "?" in args.postgres_url else "?"
    try:
        return asyncio.run(
            run_store("postgres", f"{args.postgres_url}{sep}schema={schema}", args, tmp)
        )
    finally:
        with psycopg.connect(args.postgres_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def main() -> None:
    global CONCURRENCY, METRICS
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stores", default="redis,sqlite")
    parser.add_argument("--workloads", default="w1,w2,w3,w4,w5")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--w1-n", type=int, default=20_000)
    parser.add_argument("--w2-n", type=int, default=20_000)
    parser.add_argument("--w3-n", type=int, default=2_000)
    parser.add_argument("--w3-spread", type=float, default=10.0)
    parser.add_argument("--w4-n", type=int, default=20_000)
    parser.add_argument("--w4-runs-n", type=int, default=10_000, help="W4's kept runs")
    parser.add_argument("--w5-schedules", type=int, default=20)
    parser.add_argument("--w5-seconds", type=int, default=30)
    parser.add_argument(
        "--concurrency",
        type=int,
        default=1000,
        help="the worker's concurrency for the bench task type",
    )
    parser.add_argument(
        "--metrics",
        action="store_true",
        help="the workers keep and serve Prometheus metrics (to measure what they cost)",
    )
    parser.add_argument(
        "--postgres-url",
        default="postgresql://postgres@127.0.0.1:5432/test",
        help="the PostgreSQL database the postgres store runs in (a schema per run)",
    )
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    compileall.compile_dir(ROOT / "src", quiet=1)
    CONCURRENCY, METRICS = args.concurrency, args.metrics
    results = []
    with tempfile.TemporaryDirectory(prefix="duetime-bench-") as tmpdir:
        tmp = Path(tmpdir)
        for run in range(1, args.runs + 1):
            for store in args.stores.split(","):
                if store == "redis":
                    with RedisServer() as server:
                        result = asyncio.run(run_store("redis", server.url, args, tmp))
                elif store == "sqlite":
                    url = f"sqlite:///{tmp / f'bench-{run}.db'}"
                    result = asyncio.run(run_store("sqlite", url, args, tmp))
                elif store == "postgres":
                    result = run_postgres(args, tmp)
                else:
                    raise SystemExit(f"unknown store {store!r}")
                result["run"] = run
                print(json.dumps(result), flush=True)
                results.append(result)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    os.sys.stdout.flush()


if __name__ == "__main__":
    main()
