"""bench/ab.py's workloads: what a run measures, and the :class:`Bench` that runs them.

W1, W2 and W3 are timed (bench/ab_timed.py); W1i, W2i and W2s are counted under callgrind
(bench/ab_counted.py). Each runs bench/ab_agent.py with the build's own interpreter, on a
store of the run (:class:`Bench` knows where they are), and gives its figures as a dict of
metric keys (bench/ab_table.py names them).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

from ab_build import Build
from ab_count import (
    CountedRedis,
    ServerClock,
    collected,
    counting,
    own_lines,
    quiet_env,
    run_counted,
)
from ab_counted import CountedWorkloads
from ab_timed import TimedWorkloads

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
WORKLOADS = ("w1", "w1m", "w2", "w3", "w1i", "w2i", "w2s")
#: What a run measures unless told: the counted workloads take minutes under valgrind.
DEFAULT_WORKLOADS = ("w1", "w2", "w3")


class Worker(NamedTuple):
    build: Build
    proc: subprocess.Popen[bytes]
    out: Path  # where it writes its samples when it is done
    counted: Path | None  # where callgrind writes its profile, when it runs under callgrind


class Bench(TimedWorkloads, CountedWorkloads):
    """The measurements of one run: where the stores are, and how each workload runs (one
    method per workload, by its name: :class:`TimedWorkloads`, :class:`CountedWorkloads`)."""

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
        #: W2s's redis-server, under callgrind: started by the first W2s, stopped by close().
        self.counted_redis: CountedRedis | None = None

    def close(self) -> None:
        if self.counted_redis is not None:
            self.counted_redis.stop()

    def url(self, store: str, ns: str) -> str:
        if store == "redis":
            assert self.redis_url is not None
            return self.redis_url
        if store == "postgres":  # the tests' server, a schema per measurement (each build
            # migrates its own)
            from tests.postgres import DATABASE, SERVER

            return f"{SERVER}/{DATABASE}?schema={ns}"
        return f"sqlite:///{self.tmp / ns}.db"

    def clean(self, store: str, ns: str, url: str | None = None) -> None:
        """Drop a measurement's data, so that every measurement finds the store alike (on
        Redis, the run's server or the one at ``url``)."""
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

        with redis.Redis.from_url(url or self.url(store, ns)) as client:
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
        quiet: bool = False,
    ) -> Worker:
        """The agent's worker, started (``counted``: under callgrind; ``counted`` or
        ``quiet``: in bench/ab_count.py's quiet environment, keeping no samples)."""
        out = self.tmp / f"{ns}.json"
        cmd = [str(b.python), "-I", str(AGENT), "worker", url, ns, str(n), str(out)]
        cmd.append(str(self.concurrency))
        if options:  # only then: a build without the options is run as it always was
            cmd.append(json.dumps(options))
        profile = self.tmp / f"{ns}.callgrind" if counted else None
        if profile is not None:
            cmd = counting(cmd, profile)
        with open(f"{out}.err", "wb") as err:
            env = quiet_env() if counted or quiet else None
            proc = subprocess.Popen(cmd, stderr=err, env=env)
        return Worker(b, proc, out, profile)

    def ready(self, worker: Worker, timeout: float) -> None:
        """Wait until the worker has started (its ``.ready`` file)."""
        wait_file(Path(f"{worker.out}.ready"), worker.proc, timeout)

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
