"""A/B benchmark: two revisions of duetime, each from its own build, alternating on one machine.

    python bench/ab.py d27d428 HEAD                  # 3 rounds, Redis and SQLite
    python bench/ab.py HEAD WORKTREE --stores redis  # the uncommitted change, before commit
    python bench/ab.py HEAD HEAD                     # the noise floor: a revision against itself
    python bench/ab.py HEAD WORKTREE --quick         # a smoke run, a few seconds
    python bench/ab.py d27d428 HEAD --workloads w1i,w2i --rounds 1   # counted: no noise
    python bench/ab.py WORKTREE WORKTREE --workloads w2 --b-options '{"rate": "100000/s"}'
    python bench/ab.py WORKTREE WORKTREE --workloads w2 --b-options '{"seed_priorities": 5}'
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
build without it; ``seed_priorities``: L gives W2's tasks priorities 0, 10, ..., 10 * (L - 1)
in turn, for a build with priorities; ``seed_groups``: G puts W2's task i in group
``g<i % G>``, for a build with groups, to be measured with ``group_concurrency`` or
``group_rate`` among the options).

Each round runs every workload on every store for both revisions back to back, A then B in
odd rounds and B then A in even ones, so that what the machine does meanwhile falls on
both alike. One redis-server (started here, on a free port, without persistence) serves
every Redis measurement; SQLite files live in one directory, a new one per measurement;
each measurement has a namespace of its own.

W1  one ``schedule`` call per task, tasks/s (tasks due in an hour, ~100-byte payloads);
    on Redis also the server's time in duetime's scripts per call (INFO commandstats).
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

The table gives, per store and metric, each revision's median over the rounds (min–max),
B/A of the medians with the range of the per-round ratios (each round's pair ran back to
back), and a reading: "B better" or "B worse" when B's figures all lie beyond A's range,
else "within noise". --json writes every raw figure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ab_build import REPORTED, Build, build, default_cache  # noqa: E402
from ab_count import (  # noqa: E402
    ServerClock,
    collected,
    counting,
    own_lines,
    per_unit,
    quiet_env,
    run_counted,
)
from ab_table import METRICS, table  # noqa: E402

AGENT = ROOT / "bench" / "ab_agent.py"


class Sizes(NamedTuple):
    rounds: int
    w1: int  # schedule calls
    w2: int  # due tasks the worker runs
    w3: int  # tasks spread over w3_spread seconds
    w3_spread: float
    w3_lead: float  # the time between the W3 producer's start and the first due time
    w1i: tuple[int, int] = (500, 2_500)  # W1i's two sizes, calls
    w2i: tuple[int, int] = (2_000, 12_000)  # W2i's two sizes, tasks


FULL = Sizes(rounds=3, w1=20_000, w2=20_000, w3=2_000, w3_spread=10.0, w3_lead=2.0)
QUICK = Sizes(
    rounds=1, w1=300, w2=1_000, w3=100, w3_spread=1.0, w3_lead=0.5, w1i=(50, 250), w2i=(200, 700)
)
WORKLOADS = ("w1", "w2", "w3", "w1i", "w2i")
#: What a run measures unless told: the counted workloads take minutes under valgrind.
DEFAULT_WORKLOADS = ("w1", "w2", "w3")


class Worker(NamedTuple):
    build: Build
    proc: subprocess.Popen[bytes]
    out: Path  # where it writes its samples when it is done
    counted: Path | None  # where callgrind writes its profile, when it runs under callgrind


class Bench:
    """The measurements of one run: where the stores are, and how each workload runs."""

    def __init__(self, tmp: Path, sizes: Sizes, concurrency: int, redis_url: str | None):
        self.tmp = tmp
        self.sizes = sizes
        self.concurrency = concurrency
        self.redis_url = redis_url
        #: What the agents wrote to stderr (a worker's warning about its store, say), each
        #: line once: shown after the run rather than between the figures.
        self.said: dict[str, None] = {}
        #: Per revision, the module its worker's process set-up came from (it moved).
        self.runtimes: dict[str, str] = {}
        self.server = ServerClock(redis_url) if redis_url is not None else None

    def url(self, store: str, ns: str) -> str:
        if store == "redis":
            assert self.redis_url is not None
            return self.redis_url
        if store == "postgres":  # the tests' server, a schema per measurement (each build
            # migrates its own)
            from tests.postgres import DATABASE, SERVER

            return f"{SERVER}/{DATABASE}?schema={ns}"
        return f"sqlite:///{self.tmp / ns}.db"

    def clean(self, store: str, ns: str) -> None:
        """Drop a measurement's data, so that every measurement finds the store alike."""
        if store == "sqlite":
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.tmp / ns}.db{suffix}").unlink(missing_ok=True)
            return
        if store == "postgres":
            from psycopg import sql
            from tests.postgres import DATABASE, admin, ensure_database

            ensure_database()
            with admin(DATABASE) as conn:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(ns)))
            return
        import redis

        with redis.Redis.from_url(self.url(store, ns)) as client:
            keys = list(client.scan_iter(match=f"duetime:{{{ns}*", count=1000))
            for i in range(0, len(keys), 1000):
                client.unlink(*keys[i : i + 1000])

    def agent(self, b: Build, *args: object) -> dict[str, Any]:
        """Run the agent with the build's interpreter, isolated (-I: no PYTHONPATH, no
        script directory on the path), so that it imports the build's duetime."""
        cmd = [str(b.python), "-I", str(AGENT), *map(str, args)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            raise SystemExit(f"{b.label}: agent {args[0]} exited with {proc.returncode}")
        self.heard(proc.stderr)
        result: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
        check_origin(b, result["duetime"])
        return result

    def counted_agent(self, b: Build, *args: object) -> int:
        """The instructions the agent executes, run under callgrind (see bench/ab_count.py)."""
        cmd = [str(b.python), "-I", str(AGENT), *map(str, args)]
        proc, instructions = run_counted(cmd, self.tmp / f"{args[2]}.callgrind")
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            raise SystemExit(f"{b.label}: agent {args[0]} exited with {proc.returncode}")
        self.heard(own_lines(proc.stderr))
        check_origin(b, json.loads(proc.stdout.splitlines()[-1])["duetime"])
        return instructions

    def heard(self, text: str) -> None:
        self.said.update(dict.fromkeys(line for line in text.splitlines() if line.strip()))

    def start_worker(
        self,
        b: Build,
        url: str,
        ns: str,
        n: int,
        options: dict[str, Any] | None = None,
        counted: bool = False,
    ) -> Worker:
        out = self.tmp / f"{ns}.json"
        cmd = [str(b.python), "-I", str(AGENT), "worker", url, ns, str(n), str(out)]
        cmd.append(str(self.concurrency))
        if options:  # only then: a build without the options is run as it always was
            cmd.append(json.dumps(options))
        profile = self.tmp / f"{ns}.callgrind" if counted else None
        if profile is not None:
            cmd = counting(cmd, profile)
        with open(f"{out}.err", "wb") as err:
            env = quiet_env() if counted else None
            proc = subprocess.Popen(cmd, stderr=err, env=env)
        return Worker(b, proc, out, profile)

    def finish(self, worker: Worker, timeout: float) -> dict[str, Any]:
        """The worker's samples, once it ran its tasks and exited."""
        err = Path(f"{worker.out}.err")
        try:
            wait_file(worker.out, worker.proc, timeout)
            worker.proc.wait()
        except SystemExit:
            sys.stderr.write(err.read_text())
            raise
        said = err.read_text()
        data: dict[str, Any] = json.loads(worker.out.read_text())
        if worker.counted is not None:
            data["instructions"] = collected(said, worker.counted)
            said = own_lines(said)
        self.heard(said)
        check_origin(worker.build, data["duetime"])
        self.runtimes[worker.build.name] = data["runtime"] or "none found: default loop and gc"
        for path in (worker.out, err, Path(f"{worker.out}.ready")):
            path.unlink(missing_ok=True)
        return data

    def w1(self, b: Build, store: str, ns: str, options: dict[str, Any]) -> dict[str, float]:
        server = self.server if store == "redis" else None
        if server is not None:
            server.reset()
        n = self.sizes.w1
        figures = {"w1_per_s": self.agent(b, "w1", self.url(store, ns), ns, n)["per_s"]}
        if server is not None:  # with the agent's start: a few calls in 20,000
            figures["w1_server_us_per_call"] = server.spent_us() / n
        return figures

    def w1i(self, b: Build, store: str, ns: str, options: dict[str, Any]) -> dict[str, float]:
        """The producer's instructions per ``schedule`` call, counted (W1 at two sizes)."""

        def count(n: int) -> int:
            at = f"{ns}n{n}"  # a namespace per size: each starts from an empty store
            try:
                return self.counted_agent(b, "w1", self.url(store, at), at, n)
            finally:
                self.clean(store, at)

        each, rest = per_unit(count, *self.sizes.w1i)
        return {"w1_instructions_per_call": each, "w1_start_instructions": rest}

    def w2i(self, b: Build, store: str, ns: str, options: dict[str, Any]) -> dict[str, float]:
        """The worker's instructions per task, counted (W2 at two sizes)."""

        def count(n: int) -> int:
            at = f"{ns}n{n}"
            url = self.url(store, at)
            try:
                self.agent(b, "seed", url, at, n)
                worker = self.start_worker(b, url, at, n, options, counted=True)
                return int(self.finish(worker, 1800)["instructions"])
            finally:
                self.clean(store, at)

        each, rest = per_unit(count, *self.sizes.w2i)
        return {"w2_instructions_per_task": each, "w2_start_instructions": rest}

    def w2(self, b: Build, store: str, ns: str, options: dict[str, Any]) -> dict[str, float]:
        n, url = self.sizes.w2, self.url(store, ns)
        options = dict(options)
        levels = options.pop("seed_priorities", 0)  # the tasks', not the type's
        groups = options.pop("seed_groups", 0)
        extra = [str(levels), str(groups)] if groups else [str(levels)] if levels else []
        self.agent(b, "seed", url, ns, n, *extra)
        server = self.server if store == "redis" else None
        if server is not None:
            server.reset()
        worker = self.start_worker(b, url, ns, n, options)
        t_start = time.time()
        data = self.finish(worker, 600)
        spent = server.spent_us() if server is not None else None
        times = [s[0] for s in data["samples"]]
        first, last = min(times), max(times)
        (u0, s0), (u1, s1) = data["cpu"][0], data["cpu"][-1]
        per_task = 1e6 / max(n - 1, 1)
        return {
            "w2_start_to_last_per_s": n / (last - t_start),
            "w2_first_to_last_per_s": n / (last - first) if last > first else float("inf"),
            "w2_startup_s": first - t_start,
            "w2_cpu_us_per_task": (u1 - u0 + s1 - s0) * per_task,
            "w2_cpu_user_us_per_task": (u1 - u0) * per_task,
            "w2_cpu_system_us_per_task": (s1 - s0) * per_task,
            # The claims' and settles' time in Redis, with the worker's start and end.
            **({"w2_server_us_per_task": spent / n} if spent is not None else {}),
        }

    def w3(self, b: Build, store: str, ns: str, options: dict[str, Any]) -> dict[str, float]:
        s, url = self.sizes, self.url(store, ns)
        worker = self.start_worker(b, url, ns, s.w3, options)
        wait_file(Path(f"{worker.out}.ready"), worker.proc, 60)
        produced = self.agent(b, "spread", url, ns, s.w3, s.w3_spread, s.w3_lead)
        data = self.finish(worker, s.w3_spread + s.w3_lead + 60)
        late = sorted((t - due) * 1000 for t, due in data["samples"])
        return {
            "w3_p50_ms": statistics.median(late),
            "w3_p99_ms": late[max(int(len(late) * 0.99) - 1, 0)],
            "w3_max_ms": late[-1],
            # Above 0, the producer scheduled some task after it was due.
            "w3_producer_overran_s": produced["overran_s"],
        }


def check_origin(b: Build, path: str) -> None:
    """Refuse a figure measured on another duetime than the build's."""
    if not Path(path).is_relative_to(b.python.parent.parent):
        raise SystemExit(f"{b.label} imported duetime from {path}, not from its build")


def wait_file(path: Path, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None and not path.exists():
            raise SystemExit(f"worker exited with {proc.returncode}")
        if time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"timed out waiting for {path.name}")
        time.sleep(0.01)


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
