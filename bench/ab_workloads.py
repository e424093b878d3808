"""bench/ab.py's workloads: how each is run on a build and what it measures.

W1, W2 and W3 are timed; W1i and W2i are counted under callgrind (bench/ab_count.py). Each
runs bench/ab_agent.py with the build's own interpreter, on a store of the run
(:class:`Bench` knows where they are), and gives its figures as a dict of metric keys
(bench/ab_table.py names them).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from ab_build import Build
from ab_count import (
    ServerClock,
    collected,
    counting,
    own_lines,
    per_unit,
    quiet_env,
    run_counted,
)

AGENT = Path(__file__).resolve().parent / "ab_agent.py"


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
        server = self.server_from_zero(store)
        n = self.sizes.w1
        figures = {"w1_per_s": self.agent(b, "w1", self.url(store, ns), ns, n)["per_s"]}
        if server is not None:  # with the agent's start: a few calls in 20,000
            figures["w1_server_us_per_call"] = server.spent_us() / n
        return figures

    def w1i(self, b: Build, store: str, ns: str, options: dict[str, Any]) -> dict[str, float]:
        """The producer's instructions per ``schedule`` call, counted (W1 at two sizes)."""

        def count(url: str, at: str, n: int) -> int:
            return self.counted_agent(b, "w1", url, at, n)

        each, rest = self.at_two_sizes(store, ns, self.sizes.w1i, count)
        return {"w1_instructions_per_call": each, "w1_start_instructions": rest}

    def w2i(self, b: Build, store: str, ns: str, options: dict[str, Any]) -> dict[str, float]:
        """The worker's instructions per task, counted (W2 at two sizes)."""

        def count(url: str, at: str, n: int) -> int:
            type_options = self.seed(b, url, at, n, options)
            worker = self.start_worker(b, url, at, n, type_options, counted=True)
            return int(self.finish(worker, 1800)["instructions"])

        each, rest = self.at_two_sizes(store, ns, self.sizes.w2i, count)
        return {"w2_instructions_per_task": each, "w2_start_instructions": rest}

    def at_two_sizes(
        self, store: str, ns: str, sizes: tuple[int, int], count: Callable[[str, str, int], int]
    ) -> tuple[float, float]:
        """A counted workload's instructions per unit and its start's (:func:`per_unit`):
        ``count(url, namespace, n)`` at each size, in a namespace of its own, each from an
        empty store."""

        def at_size(n: int) -> int:
            at = f"{ns}n{n}"
            try:
                return count(self.url(store, at), at, n)
            finally:
                self.clean(store, at)

        return per_unit(at_size, *sizes)

    def server_from_zero(self, store: str) -> ServerClock | None:
        """The Redis server's clock of script time, reset now; None off Redis."""
        if store != "redis" or self.server is None:
            return None
        self.server.reset()
        return self.server

    def seed(self, b: Build, url: str, ns: str, n: int, options: dict[str, Any]) -> dict[str, Any]:
        """Schedule W2's ``n`` due tasks, with the priorities or groups ``options`` asks
        for (``seed_priorities``, ``seed_groups``: the tasks', not the type's); the rest of
        ``options`` is the worker's type's."""
        options = dict(options)
        levels = options.pop("seed_priorities", 0)
        groups = options.pop("seed_groups", 0)
        extra = [str(levels), str(groups)] if groups else [str(levels)] if levels else []
        self.agent(b, "seed", url, ns, n, *extra)
        return options

    def w2(self, b: Build, store: str, ns: str, options: dict[str, Any]) -> dict[str, float]:
        n, url = self.sizes.w2, self.url(store, ns)
        options = self.seed(b, url, ns, n, options)
        server = self.server_from_zero(store)
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
