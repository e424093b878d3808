"""duetime's poller benchmark (W7): how fast one worker runs a poller's instructions, and
how soon a freed slot is filled.

    python bench/pollers.py [--stores redis,sqlite] [--instructions 20000] [--runs 3]
                            [--latency 1,10,10/5] [--samples 2000] [--trace] [--json]

W7 throughput  instructions dispatched and handled per second by one worker process
               (bench/pollers_worker.py) with a poller of concurrency 1,000 whose scheduler
               returns ``ctx.limit`` fresh instructions from an in-memory counter until
               ``--instructions`` were handed out, and a no-op async handler (its type's
               concurrency is 1,000 in every workload, so that only the poller's
               limits): from the first instructions handed out to the last
               handler's end, and from the worker process's start (wall, with Python's
               start-up and the worker's), as W2.
W7 latency     slot-to-start: the time from an instruction's end to the start of the next
               one, which the freed slot lets in. For each ``--latency`` setting
               (``concurrency[/hold ms]``: the handler waits a random 0 to ``hold`` ms, so
               that slots free at different times) a worker runs ``--samples`` instructions
               after 200 of warm-up; the k-th end frees the slot of the (k + concurrency)-th
               start (at concurrency 1, start[i + 1] - end[i]). p50/p90/p99/max in ms.

With ``--trace`` the latency workers record a timeline of their store calls and wake-ups
(bench/pollers_trace.py), and the script prints, at concurrency 1, how long each step of the
path from an instruction's end to the next one's start takes, and how the poller's hasten
calls came back. The timeline adds a few microseconds a step.

Redis is a redis-server of the script's own on a free port (tests.servers, no persistence),
never the machine's shared one; SQLite a file in a temporary directory. Every process does
its own measuring (the scheduler and the handlers run in the worker): this one only starts
them and reads their results. ``--json`` prints the results as JSON instead of tables.
"""

from __future__ import annotations

import argparse
import compileall
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(1, str(ROOT))  # after bench/, so that `bench` is bench/bench.py

import pollers_trace  # noqa: E402 - bench/, first on the path of a script run here
from bench import wait_file  # noqa: E402 - bench/bench.py
from tests.servers import RedisServer  # noqa: E402

#: The throughput poller's concurrency, and its handler's in the worker.
THROUGHPUT_CONCURRENCY = 1000
#: Latency samples left out at the start: connections opened, scripts loaded, caches warm.
WARMUP = 200
#: How long a worker may take before it counts as stuck, in seconds.
WORKER_TIMEOUT = 600


def run_worker(url: str, tmp: Path, n: int, concurrency: int, *extra: str) -> dict[str, Any]:
    """Run one worker process to the end of ``n`` instructions; returns its results, with
    ``spawned`` (epoch seconds, just before the process was started) added."""
    ns = "w7" + uuid.uuid4().hex[:8]
    out, log = tmp / f"{ns}.json", tmp / f"{ns}.log"
    cmd = [
        sys.executable,
        str(ROOT / "bench" / "pollers_worker.py"),
        *("--url", url, "--namespace", ns, "--n", str(n)),
        *("--concurrency", str(concurrency), "--out", str(out), *extra),
    ]
    with log.open("wb") as stderr:  # the worker's warnings (Redis without an AOF) go here
        spawned = time.time()
        proc = subprocess.Popen(cmd, stderr=stderr)
        try:
            wait_file(out, proc, WORKER_TIMEOUT)
        except RuntimeError:
            sys.stderr.write(log.read_text())
            raise
        proc.wait()
    data: dict[str, Any] = json.loads(out.read_text())
    data["spawned"] = spawned
    return data


def percentile(ordered: list[float], p: float) -> float:
    """The p-th fraction of sorted values, as bench/bench.py reads its p99."""
    return ordered[max(int(len(ordered) * p) - 1, 0)]


def unrun(data: dict[str, Any]) -> int:
    """Instructions handed out whose handler never started (none is expected)."""
    return sum(1 for t in data["start"] if not t)


def throughput(url: str, tmp: Path, n: int) -> dict[str, Any]:
    data = run_worker(url, tmp, n, THROUGHPUT_CONCURRENCY)
    last = data["last_end"]
    calls = [returned for _, _, returned in data["calls"] if returned]
    return {
        "instructions": n,
        "first_to_last_per_s": n / (last - data["first_handout"]),
        "wall_per_s": n / (last - data["spawned"]),
        "startup_s": data["first_handout"] - data["spawned"],
        "productive_calls": len(calls),
        "per_call": statistics.fmean(calls),
        "unrun": unrun(data),
    }


def slot_latency(data: dict[str, Any], concurrency: int) -> list[float]:
    """Slot-to-start latencies in ms after the warm-up: the k-th end (in time order) frees
    the slot that the (k + concurrency)-th start takes. A start needs a free slot, so it
    comes after the end it is paired with."""
    starts, ends = sorted(data["start"]), sorted(data["end"])
    return sorted(
        (starts[k + concurrency] - ends[k]) * 1000 for k in range(WARMUP, len(ends) - concurrency)
    )


def latency(url: str, tmp: Path, setting: str, samples: int, trace: bool) -> dict[str, Any]:
    concurrency, _, hold = setting.partition("/")
    c, hold_ms = int(concurrency), float(hold or 0)
    extra = ["--hold-ms", str(hold_ms), *(["--trace"] if trace else [])]
    data = run_worker(url, tmp, WARMUP + samples + c, c, *extra)
    lat = slot_latency(data, c)
    result: dict[str, Any] = {
        "concurrency": c,
        "hold_ms": hold_ms,
        "samples": len(lat),
        "p50_ms": statistics.median(lat),
        "p90_ms": percentile(lat, 0.90),
        "p99_ms": percentile(lat, 0.99),
        "max_ms": lat[-1],
        "unrun": unrun(data),
    }
    if trace:
        marks = data["marks"]
        result["hasten"] = pollers_trace.hasten_misses(marks)
        result["hasten_retries"] = pollers_trace.hasten_retries(marks)
        if c == 1:
            result["path"] = pollers_trace.breakdown(marks, data["start"], data["end"], WARMUP)
    return result


def run_store(url: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    return {
        "throughput": throughput(url, tmp, args.instructions),
        "latency": [
            latency(url, tmp, setting, args.samples, args.trace)
            for setting in args.latency.split(",")
        ],
    }


def show(result: dict[str, Any]) -> None:
    t = result["throughput"]
    print(
        f"{result['store']:6} run {result['run']}  throughput {t['instructions']:,}:"
        f" {t['first_to_last_per_s']:9,.0f}/s first→last, {t['wall_per_s']:9,.0f}/s wall"
        f" (start-up {t['startup_s']:.2f} s, {t['productive_calls']} calls of"
        f" {t['per_call']:,.0f}, unrun {t['unrun']})"
    )
    for r in result["latency"]:
        setting = f"c={r['concurrency']}" + (f" hold 0–{r['hold_ms']:g} ms" if r["hold_ms"] else "")
        print(
            f"{'':12}slot→start {setting:18} p50 {r['p50_ms']:5.2f}  p90 {r['p90_ms']:5.2f}"
            f"  p99 {r['p99_ms']:5.2f}  max {r['max_ms']:6.2f} ms  ({r['samples']:,} samples,"
            f" unrun {r['unrun']})"
        )
        if "hasten" in r:
            show_trace(r)


def show_trace(r: dict[str, Any]) -> None:
    h, retry = r["hasten"], r["hasten_retries"]
    line = f"hasten: moved {h['moved']}, due already {h['due_already']}"
    line += f", not waiting {h['not_waiting']}"
    if retry.get("misses"):
        line += (
            f"; after a miss the poller's task was settled in {retry['settled_after_p50_ms']:.2f}"
            f" ms (p50), the retry went out after {retry['retried_after_p50_ms']:.2f} ms"
        )
    print(f"{'':14}{line}")
    path = r.get("path")
    if not path or not path.get("samples"):
        return
    print(
        f"{'':14}{'step (concurrency 1)':36} {'p50':>6} {'p99':>6} {'mean':>6} {'slowest 1 %':>11}"
    )
    for s in path["steps"]:
        print(
            f"{'':14}{s['step']:36} {s['p50_ms']:6.3f} {s['p99_ms']:6.3f} {s['mean_ms']:6.3f}"
            f" {s['tail_mean_ms']:11.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stores", default="redis,sqlite")
    parser.add_argument("--instructions", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "--latency",
        default="1,10,10/5",
        help="latency settings, each concurrency[/hold ms] (default: %(default)s)",
    )
    parser.add_argument("--samples", type=int, default=2_000)
    parser.add_argument("--trace", action="store_true", help="time each step of the path")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    args = parser.parse_args()
    compileall.compile_dir(ROOT / "src", quiet=1)  # as bench/bench.py: see its docstring
    results = []
    with tempfile.TemporaryDirectory(prefix="duetime-pollers-") as tmpdir:
        tmp = Path(tmpdir)
        for run in range(1, args.runs + 1):
            for store in args.stores.split(","):
                if store == "redis":
                    with RedisServer() as server:
                        result = run_store(server.url, args, tmp)
                elif store == "sqlite":
                    result = run_store(f"sqlite:///{tmp / f'pollers-{run}.db'}", args, tmp)
                else:
                    raise SystemExit(f"unknown store {store!r}")
                result = {"store": store, "run": run, **result}
                if not args.json:
                    show(result)
                results.append(result)
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
