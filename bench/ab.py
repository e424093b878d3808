"""A/B benchmark: two revisions of duetime, each from its own build, alternating on one machine.

    python bench/ab.py d27d428 HEAD                  # 3 rounds, Redis and SQLite
    python bench/ab.py HEAD WORKTREE --stores redis  # the uncommitted change, before commit
    python bench/ab.py HEAD HEAD                     # the noise floor: a revision against itself
    python bench/ab.py 0729856 HEAD --workloads w1m  # merges: in the store, or read and sent again
    python bench/ab.py HEAD WORKTREE --quick         # a smoke run, a few seconds
    python bench/ab.py d27d428 HEAD --workloads w1i,w2i,w2s --rounds 1   # counted: no noise
    python bench/ab.py WORKTREE WORKTREE --workloads w2 --b-options '{"rate": "100000/s"}'
    python bench/ab.py WORKTREE WORKTREE --workloads w2 --b-options '{"seed_priorities": 5}'
    python bench/ab.py HEAD HEAD --workloads w2i --b-options '{"monitored": false}'
    python bench/ab.py WORKTREE WORKTREE --workloads w2 \
        --b-options '{"seed_groups": 10, "group_concurrency": 1000}'
    make ab A=d27d428 B=HEAD

Each revision (a commit, a branch, a tag, or WORKTREE for the working tree as it is) is
installed as a package into a venv of its own, cached under --cache by the package's code
(src/ and pyproject.toml), so a second run reuses the builds. The measuring code is this
checkout's, for both: this script times, and bench/ab_agent.py, run by each build's own
interpreter, produces and works. Each revision runs at its own defaults, but for the
worker's concurrency (1,000) and timeout (none), set as bench/bench.py sets them, and for
the task options --a-options and --b-options give its worker's type (JSON: a cost of an
option, say flow control's ``rate`` or ``global_concurrency``, measured against the same
build without it; ``monitored``: false runs the worker without its heartbeat and
per-minute counts, what monitoring costs; ``seed_priorities``: L gives W2's tasks priorities
0, 10, ..., 10 * (L - 1) in turn, for a build with priorities; ``seed_groups``: G puts
W2's task i in group ``g<i % G>``, for a build with groups, to be measured with
``group_concurrency`` or ``group_rate`` among the options).

Each round runs every workload on every store for both revisions back to back, A then B in
odd rounds and B then A in even ones, so that what the machine does meanwhile falls on
both alike. One redis-server (started here, on a free port, without persistence) serves
every Redis measurement; SQLite files live in one directory, a new one per measurement;
each measurement has a namespace of its own.

W1  one ``schedule`` call per task, tasks/s (tasks due in an hour, ~100-byte payloads);
    on Redis also the server's time in duetime's scripts per call (INFO commandstats).
W1m (named in --workloads only): one ``if_exists="merge"`` call per task into a task
    pending an hour away (a quarter of W1's count), calls/s.
W2  N due tasks (one ``schedule_many``), one worker process at concurrency 1,000, a no-op
    async handler: tasks/s from the worker process's start to the last handler, and from
    the first handler to the last; and the worker process's CPU time (user + system, from
    its own getrusage) per task, first handler to last; on Redis also the server's time
    in scripts per task (claims and settles).
W3  lateness (handler start minus due time) of tasks spread over some seconds, scheduled
    one call each before they are due: p50 and p99, ms.
W1i, W2i (named in --workloads only): W1's producer and W2's worker process run under
    valgrind's callgrind at two sizes, the instructions they execute per call or task
    (bench/ab_count.py): the same for the same build however busy the machine is, so one
    round says what three of the timed workloads cannot, down to a few per cent. Minutes
    per build: the process runs some fifty times slower.
W2s (named in --workloads only, Redis): the Redis server's instructions per W2 task, on a
    redis-server of its own under callgrind, at W2i's two sizes: the store's share of a
    task, which bounds W2 on Redis once the worker is faster than the server.

The table gives, per store and metric, each revision's median over the rounds (min–max),
B/A of the medians with the range of the per-round ratios (each round's pair ran back to
back), and a reading: "B better" or "B worse" when B's figures all lie beyond A's range,
else "within noise". --json writes every raw figure.

The parts: bench/ab_build.py makes the builds, bench/ab_workloads.py runs each workload
(bench/ab_timed.py the timed ones, bench/ab_counted.py the counted ones), bench/ab_count.py
counts (callgrind, the Redis server's time), bench/ab_table.py reports;
bench/ab_agent.py is what each build's interpreter runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ab_build import REPORTED, Build, build, default_cache  # noqa: E402
from ab_table import METRICS, table  # noqa: E402
from ab_workloads import DEFAULT_WORKLOADS, FULL, QUICK, WORKLOADS, Bench, Sizes  # noqa: E402


def measure(bench: Bench, builds: dict[str, Build], args: argparse.Namespace) -> list[dict]:
    """Every round, store, workload and revision, alternating; one raw record each."""
    results: list[dict[str, Any]] = []
    for rnd in range(1, bench.sizes.rounds + 1):
        order = ("A", "B") if rnd % 2 else ("B", "A")
        for store in args.stores:
            for workload in args.workloads:
                for rev in order:
                    ns = f"ab{workload}{uuid.uuid4().hex[:8]}"
                    run: Callable[..., dict[str, float]] = getattr(bench, workload)
                    load = os.getloadavg()[0]
                    figures = run(builds[rev], store, ns, args.options[rev])
                    bench.clean(store, ns)
                    record = {"round": rnd, "store": store, "workload": workload, "rev": rev}
                    results.append({**record, **figures, "load_1min": load})
                    shown = ", ".join(f"{k} {v:,.2f}" for k, v in figures.items())
                    print(f"round {rnd} {store} {workload} {rev}: {shown}", file=sys.stderr)
    return results


def header(
    builds: dict[str, Build],
    sizes: Sizes,
    results: list[dict[str, Any]],
    runtimes: dict[str, str],
    options: dict[str, dict[str, Any]],
) -> str:
    loads = [r["load_1min"] for r in results]
    redis_version = subprocess.run(
        ["redis-server", "--version"], capture_output=True, text=True, check=False
    ).stdout.split()
    lines = [
        f"bench/ab.py on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC: A = {builds['A'].label}, "
        f"B = {builds['B'].label}",
        f"{sizes.rounds} round(s); W1 {sizes.w1:,} calls; W2 {sizes.w2:,} tasks; "
        f"W3 {sizes.w3:,} tasks over {sizes.w3_spread:g} s",
        f"{os.cpu_count()} CPUs, 1-minute load average {min(loads):.2f}–{max(loads):.2f} "
        f"during the run; Python {platform.python_version()}; "
        + " ".join(w for w in redis_version if w.startswith("v=")).replace("v=", "redis-server "),
    ]
    for rev, b in builds.items():
        versions = ", ".join(f"{d} {b.versions.get(d, '-')}" for d in REPORTED)
        setup = f"; worker set-up: {runtimes[b.name]}" if b.name in runtimes else ""
        given = f"; task options {json.dumps(options[rev])}" if options.get(rev) else ""
        lines.append(f"{rev}: commit {b.commit[:12]}, build {b.key[:12]}; {versions}{setup}{given}")
    if builds["A"].versions != builds["B"].versions:
        lines.append("WARNING: the builds' dependencies differ; the ratios include that.")
    return "\n".join(lines)


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("rev_a", metavar="REV_A", help="a commit-ish, or WORKTREE")
    parser.add_argument("rev_b", metavar="REV_B", help="a commit-ish, or WORKTREE")
    parser.add_argument("--rounds", type=int, help=f"default {FULL.rounds}")
    parser.add_argument(
        "--stores", default="redis,sqlite", help="redis, sqlite, postgres (the tests' server)"
    )
    parser.add_argument(
        "--workloads",
        default=",".join(DEFAULT_WORKLOADS),
        help=f"of {', '.join(WORKLOADS)}; default {','.join(DEFAULT_WORKLOADS)}",
    )
    parser.add_argument("--tasks", type=int, help=f"W2's tasks, default {FULL.w2:,}")
    parser.add_argument("--w1-tasks", type=int, help=f"W1's calls, default {FULL.w1:,}")
    parser.add_argument("--w3-tasks", type=int, help=f"W3's tasks, default {FULL.w3:,}")
    parser.add_argument("--w3-spread", type=float, help=f"default {FULL.w3_spread:g} s")
    parser.add_argument("--concurrency", type=int, default=1000, help="the worker's, W2 and W3")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1 round, tiny sizes")
    for rev in ("a", "b"):
        parser.add_argument(
            f"--{rev}-options",
            default="{}",
            metavar="JSON",
            help=f"task options of REV_{rev.upper()}'s worker type (W2, W3), e.g. "
            "'{\"global_concurrency\": 100}'",
        )
    parser.add_argument("--cache", type=Path, default=default_cache(), help="where builds live")
    parser.add_argument("--json", type=Path, help="write every raw figure to this file")
    args = parser.parse_args()
    args.stores = [s for s in args.stores.split(",") if s]
    args.workloads = [w for w in args.workloads.split(",") if w]
    for store in args.stores:
        if store not in ("redis", "sqlite", "postgres"):
            parser.error(f"unknown store {store!r}: redis, sqlite or postgres")
    for workload in args.workloads:
        if workload not in WORKLOADS:
            parser.error(f"unknown workload {workload!r}: {', '.join(WORKLOADS)}")
    args.options = {}
    for rev in ("a", "b"):
        given = json.loads(getattr(args, f"{rev}_options"))
        if not isinstance(given, dict):
            parser.error(f"--{rev}-options must be a JSON object")
        args.options[rev.upper()] = given
    base = QUICK if args.quick else FULL
    args.sizes = Sizes(
        rounds=args.rounds or base.rounds,
        w1=args.w1_tasks or base.w1,
        w2=args.tasks or base.w2,
        w3=args.w3_tasks or base.w3,
        w3_spread=args.w3_spread or base.w3_spread,
        w3_lead=base.w3_lead,
        w1i=base.w1i,
        w2i=base.w2i,
    )
    return args


def main() -> None:
    args = parse()
    builds = {
        "A": build(ROOT, args.rev_a, args.cache, sys.executable),
        "B": build(ROOT, args.rev_b, args.cache, sys.executable),
    }
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="duetime-ab-")))
        redis_url = None
        if "redis" in args.stores:
            from tests.servers import RedisServer

            redis_url = stack.enter_context(RedisServer()).url
        bench = Bench(tmp, args.sizes, args.concurrency, redis_url)
        stack.callback(bench.close)
        results = measure(bench, builds, args)
    if bench.said:
        print("The agents wrote (each line once):", file=sys.stderr)
        sys.stderr.writelines(f"  {line}\n" for line in bench.said)
    labels = (builds["A"].label, builds["B"].label)
    print(header(builds, args.sizes, results, bench.runtimes, args.options))
    for store in args.stores:
        print()
        print(table(results, store, labels))
    if args.json:
        raw = {
            "builds": {rev: {**asdict(b), "python": str(b.python)} for rev, b in builds.items()},
            "sizes": args.sizes._asdict(),
            "concurrency": args.concurrency,
            "task_options": args.options,
            "results": results,
            "metrics": [m.key for m in METRICS],
        }
        args.json.write_text(json.dumps(raw, indent=2))


if __name__ == "__main__":
    main()
