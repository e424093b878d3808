"""duetime's capacity by simulation (W8): the Redis server's CPU per task, the tasks a second
one primary and N primaries can carry by that measure, and a check on a local cluster.

    python bench/capacity.py                       # all three parts, about 35 s
    python bench/capacity.py --skip-cluster        # the measurement and the model only
    python bench/capacity.py --cluster-runs 1 --workers 1

1. The measurement, on one redis-server of the script's own (tests.servers: a free port, no
   persistence), never the machine's shared one. In each of ``--rounds`` rounds, in a
   namespace of its own, with W2's ~100-byte payload, all tasks due a second ago:

   schedule_many  ``--n`` tasks in one ``App.schedule_many`` call (1,000 a script call);
   schedule       ``--singles`` more, one ``App.schedule`` call each (tasks due within a
                  minute: each call also writes its resend marker);
   ping           as many PINGs, one at a time: the server's cost of a bare round trip;
   fire           one worker process (W2's: concurrency 1,000, a no-op async handler)
                  runs them all: its claims (``claim_due``) and settles (``settle``), and
                  the lease renewals, if any (the worker counts its calls of each);
   split          in this process, cycles of ``Store.claim(limit=k)`` of tasks due now and
                  ``Store.settle`` of the k as done, for k = 500 (the worker's claim batch)
                  and 100: what a task's claim and its settle cost apart, since
                  commandstats lump every script under EVALSHA.

   Between the phases the script reads ``INFO commandstats`` (EVALSHA and EVAL: the time
   in duetime's scripts, the commands they call included) and ``INFO cpu`` (the main
   thread's user + system CPU, which adds reading requests and writing replies: what
   runs out when a primary is at 100 % of a core). Both over the tasks of the phase give
   the server's µs a task. Commandstats time a command by the clock, so a script during
   which the kernel ran another process counts that too: on a machine of few cores the
   CPU figure is the one to trust. A warm-up round (2,000 tasks) comes first and is not counted:
   Redis compiles the scripts and allocates a latency histogram per command on first use.

2. The model: a primary at 100 % of one core carries 1,000,000 / (µs a task's schedule,
   claim and settle take) tasks a second; a type of ``partitions`` >= N spread evenly
   over N primaries carries N times that, so long as the clients keep up: the same run
   measures what one worker process fires a second and its own CPU a task. A type's
   partitions fall on the primaries by hash slot, not evenly: the script also works out,
   for a random namespace, the busiest primary's share of 3 to 30 partitions over 3.

3. The check, on a local Redis Cluster (tests.servers.RedisCluster: 3 primaries and
   ``--replicas`` replicas each, AOF off here): W2 with ``--cluster-n`` tasks of one type,
   ``partitions=1`` (its one hash slot on one primary) against ``partitions=6`` (with
   ``--spread even``, the default, a namespace whose six slots fall two on each primary),
   fired by ``--workers`` worker processes, ``--cluster-runs`` runs alternating the two
   layouts. Every node's commandstats and CPU are read before and after the firing, so the
   server's CPU shows concentrated on one primary or spread over three. Every handled id is
   counted: lost or duplicated tasks, and any left in the store, are reported.

On a 2-core machine the cluster's six servers, the worker processes and this script share
the two cores: the check shows where the server's CPU goes and how busy each primary is,
not what three primaries on machines of their own would carry.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import compileall
import json
import logging
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(1, str(ROOT))  # after bench/, so that `bench` is bench/bench.py

import redis.asyncio as aredis  # noqa: E402
from bench import payload  # noqa: E402 - bench/bench.py
from redis.crc import key_slot  # noqa: E402
from tests.servers import RedisCluster, RedisServer  # noqa: E402
from worker_proc import run as run_in_worker_loop  # noqa: E402 - bench/, first on the path
from worker_proc import serve_until  # noqa: E402

import duetime  # noqa: E402
from duetime.model import DEFAULT_LEASE, DEFAULT_LOOKAHEAD, DEFAULT_MAX_STALLS  # noqa: E402
from duetime.partitions.layout import part_name  # noqa: E402
from duetime.stores.base import Outcome  # noqa: E402
from duetime.stores.redis.keys import type_keys  # noqa: E402

TYPE = "work"
#: W2's worker: concurrency 1,000 (so a claim asks for the default batch of 500).
CONCURRENCY = 1000
#: The claim batches of the split phase, and the tasks each is measured over.
SPLIT = ((500, 20_000), (100, 10_000))
LEASE_MS = int(DEFAULT_LEASE.total_seconds() * 1000)
LOOKAHEAD_MS = int(DEFAULT_LOOKAHEAD.total_seconds() * 1000)
#: The scripts' commands in commandstats (the commands a script calls are counted there
#: too, under their own names, and their time is inside the script's).
SCRIPT_COMMANDS = ("evalsha", "eval")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the worker process ------------------------------------------------------------------------


def instrument(inner: Any) -> dict[str, list[int]]:
    """Count the store calls a worker makes and the tasks in each: claims (tasks claimed),
    settles (outcomes) and lease renewals (leases), on the store under the partitions."""
    calls: dict[str, list[int]] = {"claim": [], "settle": [], "extend": []}
    sizes = {
        "claim": lambda reply, args: len(reply.claims),
        "settle": lambda reply, args: len(args[1]),
        "extend": lambda reply, args: len(args[1]),
    }
    for name, size in sizes.items():
        original = getattr(inner, name)

        async def wrapped(
            *args: Any,
            _call: Any = original,
            _log: list[int] = calls[name],
            _size: Any = size,
            **kwargs: Any,
        ) -> Any:
            reply = await _call(*args, **kwargs)
            _log.append(_size(reply, args))
            return reply

        setattr(inner, name, wrapped)
    return calls


class _NoPersistenceWarning(logging.Filter):
    """Drops the worker's warning that Redis keeps no append-only file: these servers keep
    none on purpose. Every other warning (a lost lease, a failed call) is shown."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Redis has no append-only file")


async def worker_main(args: argparse.Namespace) -> None:
    """A worker process: W2's no-op handler, recording each handler's start and task id;
    stops when it has run ``--n`` tasks or ``--stop`` exists, then writes ``--out``, with
    its calls to the store and its CPU from the first handler to the stop."""
    started = time.time()
    handler = logging.StreamHandler()
    handler.addFilter(_NoPersistenceWarning())
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    app = duetime.App(args.url, namespace=args.namespace)
    samples: list[tuple[float, str]] = []
    done = asyncio.Event()
    cpu = {"first": 0.0, "stop": 0.0}

    @app.task(TYPE, concurrency=args.concurrency, timeout=None, partitions=args.partitions)
    async def work(payload: dict[str, Any], ctx: duetime.Context) -> None:
        if not samples:
            cpu["first"] = time.process_time()
        samples.append((time.time(), ctx.task_id))
        if len(samples) >= args.n:
            done.set()

    store = await app.open()
    calls = instrument(store.inner)
    stop = Path(args.stop)

    async def watch() -> None:
        while not stop.exists():  # noqa: ASYNC110, ASYNC240 - another process writes it
            await asyncio.sleep(0.02)
        done.set()

    async def mark() -> None:
        await done.wait()
        cpu["stop"] = time.process_time()

    helpers = [asyncio.create_task(watch()), asyncio.create_task(mark())]
    result = {"started": started, "samples": samples, "calls": calls, "cpu": cpu}
    await serve_until(app, done, args.out, result)
    for helper in helpers:
        helper.cancel()


# -- readings of the servers ---------------------------------------------------------------


@dataclass(frozen=True)
class Reading:
    """One server's counters at one moment."""

    scripts_calls: int
    scripts_us: int
    cpu_main_s: float  # the main thread's user + system CPU
    cpu_s: float  # the whole process's


async def read(client: aredis.Redis) -> Reading:
    stats = await client.info("commandstats")
    cpu = await client.info("cpu")
    found = [stats.get(f"cmdstat_{name}", {}) for name in SCRIPT_COMMANDS]
    return Reading(
        sum(int(s.get("calls", 0)) for s in found),
        sum(int(s.get("usec", 0)) for s in found),
        float(cpu["used_cpu_user_main_thread"]) + float(cpu["used_cpu_sys_main_thread"]),
        float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]),
    )


def delta(before: Reading, after: Reading, tasks: int) -> dict[str, float]:
    """The server's figures between two readings, a task of ``tasks``."""
    return {
        "script_calls": after.scripts_calls - before.scripts_calls,
        "scripts_us": (after.scripts_us - before.scripts_us) / tasks,
        "cpu_us": (after.cpu_main_s - before.cpu_main_s) * 1e6 / tasks,
        "process_cpu_us": (after.cpu_s - before.cpu_s) * 1e6 / tasks,
        "cpu_s": after.cpu_main_s - before.cpu_main_s,
    }


def children_cpu() -> float:
    """CPU seconds of the child processes that ended and were waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# -- firing: worker processes run every task -------------------------------------------------


def start_worker(
    url: str, ns: str, partitions: int, n: int, out: Path, stop: Path
) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--url", url]
    cmd += ["--namespace", ns, "--partitions", str(partitions), "--n", str(n)]
    cmd += ["--out", str(out), "--stop", str(stop), "--concurrency", str(CONCURRENCY)]
    return subprocess.Popen(cmd)


async def fire(
    url: str, ns: str, partitions: int, ids: list[str], workers: int, tmp: Path
) -> dict[str, Any]:
    """Start ``workers`` worker processes on the namespace's due tasks and wait until every
    task was settled (the store counts none due or running) and the workers are gone. With
    one worker it stops by itself at the last task, as W2's; more are told to stop."""
    n = len(ids)
    stop = tmp / f"{ns}.stop"
    outs = [tmp / f"{ns}.{w}.json" for w in range(workers)]
    cpu0 = children_cpu()
    t_start = time.time()
    procs = [start_worker(url, ns, partitions, n, out, stop) for out in outs]
    app = duetime.App(url, namespace=ns)
    app.declare(TYPE, partitions=partitions)
    settled_at: float | None = None
    deadline = time.monotonic() + 600
    while any(p.poll() is None for p in procs):
        if not stop.exists():
            counts = await app.counts(TYPE)
            if counts["due"] == 0 and counts["running"] == 0:
                settled_at = settled_at or time.monotonic()
                # one worker stops by itself at n; should it not (a lost task), stop it
                if workers > 1 or time.monotonic() - settled_at > 3:
                    stop.touch()
        if time.monotonic() > deadline:
            for p in procs:
                p.kill()
            raise RuntimeError(f"{ns}: the workers did not finish within 600 s")
        await asyncio.sleep(0.05)
    wall = time.time() - t_start
    cpu = children_cpu() - cpu0
    failed = [p.returncode for p in procs if p.returncode != 0]
    if failed:
        raise RuntimeError(f"{ns}: worker exit codes {failed}")
    left = await app.counts(TYPE)
    await app.close()
    results = [json.loads(out.read_text()) for out in outs]
    times = [t for r in results for t, _ in r["samples"]]
    seen = collections.Counter(task_id for r in results for _, task_id in r["samples"])
    calls: dict[str, list[int]] = {k: [] for k in ("claim", "settle", "extend")}
    for r in results:
        for kind, sizes in r["calls"].items():
            calls[kind] += sizes
    if not times:
        raise RuntimeError(f"{ns}: no handler ran")
    first, last = min(times), max(times)
    claims = [c for c in calls["claim"] if c]
    return {
        "workers": workers,
        "n": n,
        "handled": len(times),
        "duplicates": sum(c - 1 for c in seen.values() if c > 1),
        "lost": sum(1 for task_id in ids if task_id not in seen),
        "unknown": sum(1 for task_id in seen if not task_id.startswith(("t", "s"))),
        "left": left,
        "start_to_last_per_s": n / (last - t_start),
        "first_to_last_per_s": n / (last - first),
        "startup_s": first - t_start,
        "wall_s": wall,
        "fire_s": last - t_start,
        "worker_cpu_us": cpu * 1e6 / n,
        # each worker's CPU from its first handler to its stop (none without a handler)
        "worker_fire_cpu_us": sum(
            r["cpu"]["stop"] - r["cpu"]["first"] for r in results if r["samples"]
        )
        * 1e6
        / n,
        "per_worker": [len(r["samples"]) for r in results],
        "claim_calls": len(calls["claim"]),
        "empty_claims": len(calls["claim"]) - len(claims),
        "claim_batch_mean": statistics.mean(claims) if claims else 0.0,
        "settle_calls": len(calls["settle"]),
        "settle_batch_mean": statistics.mean(calls["settle"]) if calls["settle"] else 0.0,
        "extend_calls": len(calls["extend"]),
    }


def due_tasks(prefix: str, count: int) -> tuple[list[duetime.Task], list[str]]:
    now = time.time()
    due = datetime.fromtimestamp(now - 1, UTC)
    ids = [f"{prefix}{i}" for i in range(count)]
    tasks = [duetime.Task(TYPE, t, at=due, payload=payload(i, now - 1)) for i, t in enumerate(ids)]
    return tasks, ids


# -- part 1: the measurement on one server ---------------------------------------------------


async def split(url: str, client: aredis.Redis, ns: str) -> dict[str, float]:
    """Server µs a task of a claim and of a settle, apart: cycles of claim(k) and settle of
    the k, commandstats read around each call."""
    app = duetime.App(url, namespace=ns)
    app.declare(TYPE)
    store = await app.open()
    out: dict[str, float] = {}
    for k, total in SPLIT:
        tasks, _ = due_tasks(f"x{k}.", total)
        await app.schedule_many(tasks)
        claim_us = settle_us = 0
        claim_cpu = settle_cpu = 0.0
        for _ in range(total // k):
            r0 = await read(client)
            batch = await store.claim(
                TYPE,
                now_ms=app.clock.now_ms(),
                limit=k,
                lease_ms=LEASE_MS,
                max_stalls=DEFAULT_MAX_STALLS,
                at_most_once=False,
                lookahead_ms=LOOKAHEAD_MS,
            )
            r1 = await read(client)
            if len(batch.claims) != k:
                raise RuntimeError(f"{ns}: claimed {len(batch.claims)}, not {k}")
            outcomes = [Outcome("done", claim) for claim in batch.claims]
            kept = await store.settle(TYPE, outcomes, app.clock.now_ms())
            r2 = await read(client)
            if not all(kept):
                raise RuntimeError(f"{ns}: {kept.count(False)} outcomes not kept")
            claim_us += r1.scripts_us - r0.scripts_us
            settle_us += r2.scripts_us - r1.scripts_us
            claim_cpu += r1.cpu_main_s - r0.cpu_main_s
            settle_cpu += r2.cpu_main_s - r1.cpu_main_s
        out[f"claim{k}_us"] = claim_us / total
        out[f"settle{k}_us"] = settle_us / total
        # with an INFO's round trip in each: an upper bound, for the ratio only
        out[f"claim{k}_cpu_us"] = claim_cpu * 1e6 / total
        out[f"settle{k}_cpu_us"] = settle_cpu * 1e6 / total
    await app.close()
    return out


async def measure_round(
    url: str, client: aredis.Redis, ns: str, n: int, singles: int, tmp: Path
) -> dict[str, Any]:
    app = duetime.App(url, namespace=ns)
    app.declare(TYPE)
    await app.open()
    many, many_ids = due_tasks("t", n)
    one, one_ids = due_tasks("s", singles)
    r0 = await read(client)
    t0 = time.perf_counter()
    await app.schedule_many(many)
    many_s = time.perf_counter() - t0
    r1 = await read(client)
    t0 = time.perf_counter()
    for task in one:
        await app.schedule(TYPE, task.task_id, at=task.at, payload=task.payload)
    one_s = time.perf_counter() - t0
    r2 = await read(client)
    await app.close()
    t0 = time.perf_counter()
    for _ in range(singles):
        await client.ping()
    ping_s = time.perf_counter() - t0
    r3 = await read(client)
    fired = await fire(url, ns, 1, many_ids + one_ids, 1, tmp)
    r4 = await read(client)
    return {
        "schedule_many": {**delta(r0, r1, n), "tasks_per_s": n / many_s},
        "schedule": {**delta(r1, r2, singles), "calls_per_s": singles / one_s},
        "ping": {**delta(r2, r3, singles), "calls_per_s": singles / ping_s},
        "fire": {**delta(r3, r4, n + singles), **fired},
        "split": await split(url, client, ns + "x"),
    }


async def measure(url: str, args: argparse.Namespace, tmp: Path) -> list[dict[str, Any]]:
    client = aredis.Redis.from_url(url)
    log("single server: warm-up round")
    await measure_round(url, client, "w8warm", 2_000, 200, tmp)
    rounds = []
    for r in range(args.rounds):
        result = await measure_round(url, client, f"w8r{r}", args.n, args.singles, tmp)
        f = result["fire"]
        log(
            f"single server: round {r + 1}/{args.rounds}: fire {f['cpu_us']:.2f} µs a task"
            f" (scripts {f['scripts_us']:.2f}), {f['first_to_last_per_s']:,.0f} tasks/s"
        )
        rounds.append(result)
    await client.aclose()
    return rounds


# -- part 2: the model -----------------------------------------------------------------------


def med(values: list[float]) -> float:
    return statistics.median(values)


def span(values: list[float], fmt: str = ",.2f") -> str:
    lo, hi = min(values), max(values)
    return format(lo, fmt) if format(lo, fmt) == format(hi, fmt) else f"{lo:{fmt}}–{hi:{fmt}}"


def per_task(rounds: list[dict[str, Any]]) -> dict[str, dict[str, list[float]]]:
    """Each operation's server µs a task in every round, by scripts and by main-thread CPU."""
    out: dict[str, dict[str, list[float]]] = {}
    for op in ("schedule_many", "schedule", "ping", "fire"):
        out[op] = {
            basis: [r[op][key] for r in rounds]
            for basis, key in (("scripts", "scripts_us"), ("cpu", "cpu_us"))
        }
    return out


def model(rounds: list[dict[str, Any]], primaries: list[int]) -> dict[str, Any]:
    ops = per_task(rounds)
    life = {}
    for producer in ("schedule_many", "schedule"):
        for basis in ("scripts", "cpu"):
            life[(producer, basis)] = [
                a + b for a, b in zip(ops[producer][basis], ops["fire"][basis], strict=True)
            ]
    fired = [r["fire"] for r in rounds]
    return {
        "ops": ops,
        "life": life,
        "primaries": primaries,
        "worker_per_s": [f["first_to_last_per_s"] for f in fired],
        "worker_start_per_s": [f["start_to_last_per_s"] for f in fired],
        "worker_cpu_us": [f["worker_cpu_us"] for f in fired],
        "worker_fire_cpu_us": [f["worker_fire_cpu_us"] for f in fired],
    }


def show_measurement(rounds: list[dict[str, Any]]) -> None:
    ops = per_task(rounds)
    print("W8 part 1: the Redis server's µs a task (one server, no persistence), over rounds")
    print(f"{'operation':<34} | {'in scripts (commandstats)':>25} | {'main thread CPU':>16}")
    rows = [
        ("schedule_many (1,000 a call)", "schedule_many"),
        ("schedule (one call a task)", "schedule"),
        ("claim + settle (the worker)", "fire"),
        ("a bare round trip (PING), a call", "ping"),
    ]
    for label, op in rows:
        print(f"{label:<34} | {span(ops[op]['scripts']):>25} | {span(ops[op]['cpu']):>16}")
    for producer, label in (
        ("schedule_many", "whole life, batched"),
        ("schedule", "whole life, one call"),
    ):
        s = [a + b for a, b in zip(ops[producer]["scripts"], ops["fire"]["scripts"], strict=True)]
        c = [a + b for a, b in zip(ops[producer]["cpu"], ops["fire"]["cpu"], strict=True)]
        print(f"{label:<34} | {span(s):>25} | {span(c):>16}")
    print(
        "\nclaim and settle apart (this process's claim(k) and settle of the k, scripts µs a task):"
    )
    for k, _ in SPLIT:
        claim = [r["split"][f"claim{k}_us"] for r in rounds]
        settle = [r["split"][f"settle{k}_us"] for r in rounds]
        both = [a + b for a, b in zip(claim, settle, strict=True)]
        claim_cpu = [r["split"][f"claim{k}_cpu_us"] for r in rounds]
        settle_cpu = [r["split"][f"settle{k}_cpu_us"] for r in rounds]
        print(
            f"  k={k:<4} claim {span(claim)}, settle {span(settle)}, both {span(both)};"
            f" main thread CPU (with an INFO round trip a call): claim {span(claim_cpu)},"
            f" settle {span(settle_cpu)}"
        )
    print("\nthe worker's calls (per round):")
    for r in rounds:
        f = r["fire"]
        print(
            f"  {f['n']:,} tasks: {f['claim_calls']} claims ({f['empty_claims']} empty, mean"
            f" {f['claim_batch_mean']:.0f} tasks), {f['settle_calls']} settles (mean"
            f" {f['settle_batch_mean']:.0f}), {f['extend_calls']} renewals, {f['script_calls']}"
            f" script calls in all; {f['first_to_last_per_s']:,.0f} tasks/s first→last"
            f" ({f['start_to_last_per_s']:,.0f} start→last), worker CPU"
            f" {f['worker_fire_cpu_us']:.1f} µs a task first→last ({f['worker_cpu_us']:.1f}"
            f" with its start); handled {f['handled']:,}, lost {f['lost']},"
            f" duplicates {f['duplicates']}"
        )
    m = [r["schedule_many"] for r in rounds]
    s = [r["schedule"] for r in rounds]
    print(
        f"  producer: schedule_many {span([x['tasks_per_s'] for x in m], ',.0f')} tasks/s,"
        f" schedule {span([x['calls_per_s'] for x in s], ',.0f')} calls/s, PING"
        f" {span([r['ping']['calls_per_s'] for r in rounds], ',.0f')} calls/s"
    )
    process = [r["fire"]["process_cpu_us"] - r["fire"]["cpu_us"] for r in rounds]
    print(f"  CPU of the server's other threads while firing: {span(process)} µs a task\n")


def show_model(mdl: dict[str, Any]) -> None:
    print("W8 part 2: the model, tasks a second (each primary at 100 % of one core)")
    worker = med(mdl["worker_per_s"])
    worker_cpu = med(mdl["worker_fire_cpu_us"])
    print(
        f"  clients: one worker process fired {span(mdl['worker_per_s'], ',.0f')} tasks/s"
        f" first→last ({span(mdl['worker_start_per_s'], ',.0f')} start→last), at"
        f" {span(mdl['worker_fire_cpu_us'], '.1f')} µs of its CPU a task"
        f" ({1e6 / worker_cpu:,.0f} tasks/s for a core of it)"
    )
    header = f"{'producer':<10} {'basis':<8} {'µs a task':>9}"
    header += "".join(f" | {f'{n} primaries':>14}" for n in mdl["primaries"])
    header += f" | {'workers a primary':>17}"
    print(header)
    for producer, plabel in (("schedule_many", "batched"), ("schedule", "one call")):
        for basis, blabel in (("cpu", "CPU"), ("scripts", "scripts")):
            us = med(mdl["life"][(producer, basis)])
            cap = 1e6 / us
            cells = "".join(f" | {n * cap:>14,.0f}" for n in mdl["primaries"])
            print(f"{plabel:<10} {blabel:<8} {us:>9.2f}{cells} | {cap / worker:>17.1f}")
    print(
        "  (N primaries: a type of partitions >= N whose slots fall evenly on them; the"
        " busiest primary sets the pace)\n"
    )


def spread_odds(partitions: int, primaries: int, trials: int = 20_000) -> dict[str, float]:
    """For a random namespace, the share of a type's partitions on its busiest primary: its
    mean, and how often the spread is even."""
    rng = random.Random(8)
    even = -(-partitions // primaries)
    shares = []
    for _ in range(trials):
        counts = collections.Counter(rng.randrange(primaries) for _ in range(partitions))
        shares.append(max(counts.values()))
    return {
        "partitions": partitions,
        "mean_busiest": statistics.mean(shares) / partitions,
        "even_share": sum(s == even for s in shares) / trials,
        "speedup_mean": statistics.mean(partitions / s for s in shares),
    }


# -- part 3: the check on a local cluster ----------------------------------------------------


def primaries_of(cluster: RedisCluster) -> list[tuple[int, list[tuple[int, int]]]]:
    return [(node.port, node.slots) for node in cluster.primaries()]


def owner(primaries: list[tuple[int, list[tuple[int, int]]]], key: str) -> int:
    slot = key_slot(key.encode())
    for port, slots in primaries:
        if any(a <= slot <= b for a, b in slots):
            return port
    raise LookupError(slot)


def layout_keys(ns: str, partitions: int) -> list[str]:
    names = [TYPE] if partitions == 1 else [part_name(TYPE, p) for p in range(partitions)]
    return [type_keys(ns, name).due for name in names]


def pick_namespace(
    primaries: list[tuple[int, list[tuple[int, int]]]], prefix: str, partitions: int, even: bool
) -> tuple[str, dict[int, int]]:
    """A namespace, and its partitions on each primary: with ``even``, the first whose
    partitions fall evenly over the primaries."""
    top = -(-partitions // len(primaries))
    for k in range(10_000):
        ns = f"{prefix}{k}"
        spread = collections.Counter(owner(primaries, key) for key in layout_keys(ns, partitions))
        if not even or partitions == 1 or max(spread.values()) <= top:
            return ns, {port: spread.get(port, 0) for port, _ in primaries}
    raise RuntimeError("no namespace spreads evenly")


async def read_nodes(clients: dict[int, aredis.Redis]) -> dict[int, Reading]:
    return {port: await read(c) for port, c in clients.items()}


def node_deltas(
    before: dict[int, Reading], after: dict[int, Reading], tasks: int, seconds: float
) -> dict[int, dict[str, float]]:
    out = {}
    for port in before:
        d = delta(before[port], after[port], tasks)
        out[port] = {**d, "busy": d["cpu_s"] / seconds}
    return out


async def cluster_trial(
    cluster: RedisCluster,
    clients: dict[int, aredis.Redis],
    primaries: list[tuple[int, list[tuple[int, int]]]],
    partitions: int,
    workers: int,
    run: int,
    args: argparse.Namespace,
    tmp: Path,
) -> dict[str, Any]:
    url = cluster.cluster_url
    ns, spread = pick_namespace(
        primaries, f"w8c{partitions}w{workers}r{run}n", partitions, args.spread == "even"
    )
    app = duetime.App(url, namespace=ns)
    app.declare(TYPE, partitions=partitions)
    await app.open()
    tasks, ids = due_tasks("t", args.cluster_n)
    r0 = await read_nodes(clients)
    t0 = time.perf_counter()
    await app.schedule_many(tasks)
    schedule_s = time.perf_counter() - t0
    r1 = await read_nodes(clients)
    await app.close()
    fired = await fire(url, ns, partitions, ids, workers, tmp)
    r2 = await read_nodes(clients)
    return {
        "partitions": partitions,
        "workers": workers,
        "run": run,
        "namespace": ns,
        "spread": spread,
        "schedule_per_s": args.cluster_n / schedule_s,
        "schedule_nodes": node_deltas(r0, r1, args.cluster_n, schedule_s),
        # busy: the share of a core over the firing, its first handler to its last
        "fire_nodes": node_deltas(r1, r2, args.cluster_n, fired["fire_s"] - fired["startup_s"]),
        **fired,
    }


async def check_cluster(cluster: RedisCluster, args: argparse.Namespace, tmp: Path) -> list[Any]:
    primaries = primaries_of(cluster)
    clients = {port: aredis.Redis(port=port) for port in cluster.ports}
    # warm-up: every primary compiles the scripts, allocates its histograms
    for partitions in (1, 6):
        await cluster_trial(cluster, clients, primaries, partitions, 1, -1, _small(args), tmp)
    trials = []
    for workers in [int(w) for w in args.workers.split(",")]:
        for run in range(args.cluster_runs):
            for partitions in (1, 6) if run % 2 == 0 else (6, 1):
                t = await cluster_trial(
                    cluster, clients, primaries, partitions, workers, run, args, tmp
                )
                log(
                    f"cluster: partitions={partitions} workers={workers} run {run + 1}:"
                    f" {t['start_to_last_per_s']:,.0f} tasks/s start→last"
                    f" ({t['first_to_last_per_s']:,.0f} first→last), lost {t['lost']},"
                    f" duplicates {t['duplicates']}, left {t['left']}"
                )
                trials.append(t)
    for c in clients.values():
        await c.aclose()
    return trials


def _small(args: argparse.Namespace) -> argparse.Namespace:
    small = argparse.Namespace(**vars(args))
    small.cluster_n = 2_000
    return small


def show_cluster(
    cluster_info: dict[str, Any], trials: list[dict[str, Any]], mdl: dict[str, Any] | None
) -> None:
    primaries = cluster_info["primaries"]
    print(
        f"W8 part 3: the check on a local cluster ({len(primaries)} primaries"
        f" {primaries}, {cluster_info['replicas']} replica(s) each, no persistence;"
        f" {cluster_info['cpus']} CPUs for all of it)"
    )
    print(
        "layout | workers | run | tasks/s start→last (first→last) | per primary in the firing:"
        " CPU µs a task (scripts µs) [% of a core] | replicas' CPU µs a task | lost / dup / left"
    )
    for t in trials:
        nodes = t["fire_nodes"]
        cells = "; ".join(
            f"{port}×{t['spread'][port]}: {node['cpu_us']:.2f} ({node['scripts_us']:.2f})"
            f" [{node['busy']:.0%}]"
            for port in primaries
            for node in [nodes[port]]
        )
        replicas = sum(nodes[p]["cpu_us"] for p in nodes if p not in primaries)
        left = sum(t["left"].values())
        print(
            f"p={t['partitions']} | {t['workers']} | {t['run'] + 1} |"
            f" {t['start_to_last_per_s']:,.0f} ({t['first_to_last_per_s']:,.0f}) | {cells} |"
            f" {replicas:.2f} | {t['lost']} / {t['duplicates']} / {left}"
        )
    print("\nsummary (runs: ranges)")
    capacity: dict[tuple[int, int], list[float]] = {}
    for workers in sorted({t["workers"] for t in trials}):
        for partitions in (1, 6):
            group = [t for t in trials if t["workers"] == workers and t["partitions"] == partitions]
            if not group:
                continue
            total = [sum(t["fire_nodes"][p]["cpu_us"] for p in primaries) for t in group]
            scripts = [sum(t["fire_nodes"][p]["scripts_us"] for p in primaries) for t in group]
            busiest = [max(t["fire_nodes"][p]["cpu_us"] for p in primaries) for t in group]
            sched = [sum(t["schedule_nodes"][p]["cpu_us"] for p in primaries) for t in group]
            sched_top = [max(t["schedule_nodes"][p]["cpu_us"] for p in primaries) for t in group]
            busy = [max(t["fire_nodes"][p]["busy"] for p in primaries) for t in group]
            # the busiest primary over a task's whole life (schedule_many and firing)
            life_top = [
                max(
                    t["schedule_nodes"][p]["cpu_us"] + t["fire_nodes"][p]["cpu_us"]
                    for p in primaries
                )
                for t in group
            ]
            cap = [1e6 / us for us in life_top]
            print(
                f"  partitions={partitions}, {workers} worker(s):"
                f" {span([t['start_to_last_per_s'] for t in group], ',.0f')} tasks/s start→last"
                f" ({span([t['first_to_last_per_s'] for t in group], ',.0f')} first→last);"
                f" claim+settle CPU µs a task on all primaries {span(total)} (scripts"
                f" {span(scripts)}), on the busiest {span(busiest)}, busiest at"
                f" {span([b * 100 for b in busy], '.0f')} % of a core; schedule_many CPU"
                f" µs a task {span(sched)} (busiest {span(sched_top)}); the busiest primary's"
                f" whole life {span(life_top)} µs a task: {span(cap, ',.0f')} tasks/s at"
                f" 100 % of a core;"
                f" {sum(t['claim_calls'] for t in group) // len(group)} claim calls,"
                f" {sum(t['settle_calls'] for t in group) // len(group)} settle calls a run;"
                f" the workers' CPU {span([t['worker_fire_cpu_us'] for t in group], '.1f')}"
                f" µs a task"
            )
            capacity[(workers, partitions)] = cap
        if (workers, 1) in capacity and (workers, 6) in capacity:
            ratio = med(capacity[(workers, 6)]) / med(capacity[(workers, 1)])
            print(
                f"  → {workers} worker(s): partitions=6 on three primaries carry {ratio:.2f}×"
                " what partitions=1 on one does, by the busiest primary (the model: 3×)"
            )
    if mdl is not None:
        life = med(mdl["life"][("schedule_many", "cpu")])
        print(
            f"  the model (one server): {life:.2f} µs a task batched, {1e6 / life:,.0f} tasks/s"
            f" for one primary, {3e6 / life:,.0f} for three"
        )
    print()


def show_odds(odds: list[dict[str, float]]) -> None:
    print("a random namespace over 3 primaries: the busiest primary's share of the partitions")
    for o in odds:
        print(
            f"  partitions={o['partitions']}: even in {o['even_share']:.0%} of namespaces;"
            f" the busiest holds {o['mean_busiest']:.0%} on average, for"
            f" {o['speedup_mean']:.2f}× one primary's capacity (3× if even)"
        )
    print()


# -- main ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=50_000, help="tasks a round, schedule_many")
    parser.add_argument("--singles", type=int, default=5_000, help="tasks a round, schedule")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--primaries", default="1,3,10", help="the model's cluster sizes")
    parser.add_argument("--cluster-n", type=int, default=50_000)
    parser.add_argument("--cluster-runs", type=int, default=3)
    parser.add_argument("--workers", default="1,2", help="worker processes in the check")
    parser.add_argument("--replicas", type=int, default=1, help="a cluster primary's")
    parser.add_argument("--spread", choices=("even", "any"), default="even")
    parser.add_argument("--skip-single", action="store_true")
    parser.add_argument("--skip-cluster", action="store_true")
    parser.add_argument("--json", help="also write the results to this file")
    # the worker process's own
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--namespace", help=argparse.SUPPRESS)
    parser.add_argument("--partitions", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--stop", help=argparse.SUPPRESS)
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        run_in_worker_loop(lambda: worker_main(args))
        return
    compileall.compile_dir(ROOT / "src", quiet=1)  # as bench/bench.py: see its docstring
    started = time.perf_counter()
    result: dict[str, Any] = {}
    mdl = None
    with tempfile.TemporaryDirectory(prefix="duetime-capacity-") as tmpdir:
        tmp = Path(tmpdir)
        if not args.skip_single:
            with RedisServer() as server:
                rounds = asyncio.run(measure(server.url, args, tmp))
            result["rounds"] = rounds
            mdl = model(rounds, [int(n) for n in args.primaries.split(",")])
            show_measurement(rounds)
            show_model(mdl)
        odds = [spread_odds(p, 3) for p in (3, 6, 12, 30)]
        show_odds(odds)
        result["spread_odds"] = odds
        if not args.skip_cluster:
            log("cluster: starting 3 primaries")
            with RedisCluster(replicas=args.replicas, server_args=("--appendonly", "no")) as cl:
                info = {
                    "primaries": [port for port, _ in primaries_of(cl)],
                    "replicas": args.replicas,
                    "cpus": len(os.sched_getaffinity(0)),
                }
                trials = asyncio.run(check_cluster(cl, args, tmp))
            result["cluster"] = {**info, "trials": trials}
            show_cluster(info, trials, mdl)
    elapsed = time.perf_counter() - started
    print(f"run time {elapsed:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
