"""duetime's PostgreSQL store against procrastinate, the same workloads in the same run.

    python bench/procrastinate_peer.py --peer-python /tmp/procrastinate-venv/bin/python

procrastinate is not a duetime dependency: install it in a venv of its own
(``python3 -m venv /tmp/procrastinate-venv``, then ``/tmp/procrastinate-venv/bin/pip
install procrastinate 'psycopg[binary,pool]'``) and name its python with
``--peer-python``. That python runs this file again with ``--side procrastinate``, which
runs procrastinate's half and prints it as JSON; duetime's half runs bench/bench.py's
workloads. Both use the PostgreSQL at ``--postgres-url``, each run in schemas of its own,
dropped at the end. The workloads (bench/bench.py's, same sizes and payloads):

W1  one ``defer_async`` per task (``schedule_at`` an hour ahead), and ``batch_defer_async``;
W2  N due tasks, then one worker process: tasks fired per second from its start;
W3  2,000 tasks due over 10 s, scheduled before the first is due: lateness p50/p99/max;
W5  20 every-second periodic tasks (procrastinate's 6-field cron) for 30 s: lateness.

procrastinate's worker runs with ``concurrency`` (its default is 1) and its
``fetch_job_polling_interval`` (default 5 s): a job deferred for later is found by that
poll, since NOTIFY only tells of jobs as they are deferred.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
PAD = "x" * 46  # bench.py's payload: about 100 bytes of JSON


def _proc_app(url: str, schema: str) -> Any:
    import procrastinate

    connector = procrastinate.PsycopgConnector(
        conninfo=url, kwargs={"options": f"-c search_path={schema}"}, max_size=20
    )
    return procrastinate.App(connector=connector)


async def _prepare(url: str, schema: str) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f"CREATE SCHEMA {schema}".encode())
    app = _proc_app(url, schema)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()


async def _drop(url: str, schema: str) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE".encode())


def _late(samples: list[tuple[float, float]]) -> dict[str, float]:
    late = sorted((t - d) * 1000 for t, d in samples)
    return {
        "n": len(late),
        "p50_ms": statistics.median(late),
        "p99_ms": late[int(len(late) * 0.99) - 1],
        "max_ms": late[-1],
    }


async def worker(args: argparse.Namespace) -> None:
    """procrastinate's worker process: run until ``--n`` handlers ran, write the samples."""
    app = _proc_app(args.url, args.schema)
    samples: list[tuple[float, float]] = []
    done = asyncio.Event()
    started = time.time()

    @app.task(name="bench", queue="bench")
    async def bench(i: int, due: float, pad: str) -> None:
        samples.append((time.time(), due))
        if len(samples) >= args.n:
            done.set()

    for n in range(args.crons):

        @app.periodic(cron="* * * * * *", periodic_id=f"c{n}")
        @app.task(name=f"tick{n}", queue="bench")
        async def tick(timestamp: int) -> None:
            samples.append((time.time(), float(timestamp)))
            if len(samples) >= args.n:
                done.set()

    async with app.open_async():
        run = asyncio.create_task(
            app.run_worker_async(
                queues=["bench"],
                concurrency=args.concurrency,
                fetch_job_polling_interval=args.poll,
                install_signal_handlers=False,
            )
        )
        Path(args.out + ".ready").write_text(str(time.time()))  # noqa: ASYNC240 - once, tiny
        await done.wait()
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
    Path(args.out).write_text(json.dumps({"started": started, "samples": samples}))  # noqa: ASYNC240


def _start(args: argparse.Namespace, schema: str, n: int, out: Path, crons: int = 0) -> Any:
    cmd = [sys.executable, str(HERE), "--side", "worker", "--url", args.postgres_url,
           "--schema", schema, "--n", str(n), "--out", str(out), "--crons", str(crons),
           "--concurrency", str(args.concurrency), "--poll", str(args.poll)]  # fmt: skip
    return subprocess.Popen(cmd)


def _wait(path: Path, proc: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"procrastinate worker: no {path.name}")
        time.sleep(0.01)


async def procrastinate_side(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"store": "procrastinate"}
    tmp = Path(tempfile.mkdtemp(prefix="procrastinate-bench-"))
    schemas = []

    async def fresh() -> tuple[str, Any]:
        schema = f"proc_{uuid.uuid4().hex[:8]}"
        schemas.append(schema)
        await _prepare(args.postgres_url, schema)
        return schema, _proc_app(args.postgres_url, schema)

    try:
        if "w1" in args.workloads:
            schema, app = await fresh()
            due = datetime.now(UTC) + timedelta(hours=1)
            async with app.open_async():
                t0 = time.perf_counter()
                for i in range(args.w1_n):
                    await app.configure_task("bench", queue="bench", schedule_at=due).defer_async(
                        i=i, due=due.timestamp(), pad=PAD
                    )
                single = args.w1_n / (time.perf_counter() - t0)
                task = app.configure_task("bench", queue="bench", schedule_at=due)
                t0 = time.perf_counter()
                await task.batch_defer_async(
                    *({"i": i, "due": due.timestamp(), "pad": PAD} for i in range(args.w1_n))
                )
                many = args.w1_n / (time.perf_counter() - t0)
            result["w1"] = {"single_per_s": single, "many_per_s": many}
        if "w2" in args.workloads:
            schema, app = await fresh()
            now = time.time()
            past = datetime.now(UTC) - timedelta(seconds=1)
            async with app.open_async():
                task = app.configure_task("bench", queue="bench", schedule_at=past)
                for first in range(0, args.w2_n, 1000):
                    last = min(first + 1000, args.w2_n)
                    await task.batch_defer_async(
                        *({"i": i, "due": now - 1, "pad": PAD} for i in range(first, last))
                    )
            out = tmp / f"{schema}.json"
            t_start = time.time()
            proc = _start(args, schema, args.w2_n, out)
            _wait(out, proc, 900)
            proc.wait()
            times = [t for t, _ in json.loads(out.read_text())["samples"]]
            result["w2"] = {
                "n": args.w2_n,
                "start_to_last_per_s": args.w2_n / (max(times) - t_start),
                "first_to_last_per_s": args.w2_n / (max(times) - min(times)),
            }
        if "w3" in args.workloads:
            schema, app = await fresh()
            out = tmp / f"{schema}.json"
            proc = _start(args, schema, args.w3_n, out)
            _wait(Path(str(out) + ".ready"), proc, 60)
            start = time.time() + 2.0
            async with app.open_async():
                for i in range(args.w3_n):
                    due = start + 10.0 * i / args.w3_n
                    at = datetime.fromtimestamp(due, UTC)
                    await app.configure_task("bench", queue="bench", schedule_at=at).defer_async(
                        i=i, due=due, pad=PAD
                    )
            _wait(out, proc, 90)
            proc.wait()
            result["w3"] = _late(json.loads(out.read_text())["samples"])
        if "w5" in args.workloads:
            schema, _ = await fresh()
            out = tmp / f"{schema}.json"
            proc = _start(args, schema, 20 * 30, out, crons=20)
            _wait(out, proc, 120)
            proc.wait()
            result["w5"] = {"schedules": 20, **_late(json.loads(out.read_text())["samples"])}
    finally:
        for schema in schemas:
            await _drop(args.postgres_url, schema)
    result["settings"] = {"concurrency": args.concurrency, "poll_s": args.poll}
    return result


def duetime_side(args: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, str(HERE.parent))
    import bench  # bench/bench.py

    bench.CONCURRENCY = 1000
    options = argparse.Namespace(
        workloads=args.workloads, w1_n=args.w1_n, w2_n=args.w2_n, w3_n=args.w3_n,
        w3_spread=10.0, w5_schedules=20, w5_seconds=30, postgres_url=args.postgres_url,
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="duetime-bench-") as tmp:
        return bench.run_postgres(options, Path(tmp))


ROWS = [
    ("W1 schedule, one call a task (/s)", "w1", "single_per_s"),
    ("W1 schedule, one batch (/s)", "w1", "many_per_s"),
    ("W2 fired by one worker, from its start (/s)", "w2", "start_to_last_per_s"),
    ("W3 lateness p50 (ms)", "w3", "p50_ms"),
    ("W3 lateness p99 (ms)", "w3", "p99_ms"),
    ("W3 lateness max (ms)", "w3", "max_ms"),
    ("W5 cron lateness p50 (ms)", "w5", "p50_ms"),
    ("W5 cron lateness p99 (ms)", "w5", "p99_ms"),
]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--side", choices=("both", "procrastinate", "worker"), default="both")
    parser.add_argument("--peer-python", help="the python of procrastinate's venv")
    parser.add_argument("--postgres-url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--workloads", default="w1,w2,w3,w5")
    parser.add_argument("--w1-n", type=int, default=5_000)
    parser.add_argument("--w2-n", type=int, default=20_000)
    parser.add_argument("--w3-n", type=int, default=2_000)
    parser.add_argument("--concurrency", type=int, default=100, help="procrastinate's")
    parser.add_argument("--poll", type=float, default=5.0, help="procrastinate's polling (s)")
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--schema", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--crons", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side == "worker":
        asyncio.run(worker(args))
        return
    if args.side == "procrastinate":
        print(json.dumps(asyncio.run(procrastinate_side(args))), flush=True)
        return
    if not args.peer_python:
        raise SystemExit("--peer-python: the python of a venv with procrastinate installed")
    peer_args = [a for a in sys.argv[1:] if not a.startswith("--peer-python")]
    if args.peer_python in peer_args:
        peer_args.remove(args.peer_python)
    peer = subprocess.run(
        [args.peer_python, str(HERE), *peer_args, "--side", "procrastinate"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    theirs = json.loads(peer.stdout.strip().splitlines()[-1])
    ours = duetime_side(args)
    print(json.dumps({"duetime": ours, "procrastinate": theirs}), flush=True)
    print(f"{'':46} {'duetime (postgres)':>20} {'procrastinate':>16}")
    for label, workload, key in ROWS:
        a = ours.get(workload, {}).get(key)
        b = theirs.get(workload, {}).get(key)
        print(f"{label:46} {_fmt(a):>20} {_fmt(b):>16}")
    print(f"procrastinate settings: {theirs.get('settings')}")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


if __name__ == "__main__":
    main()
