"""duetime's pending-work benchmark (W9): whether scheduling and claiming stay as fast with
10,000,000 tasks pending as with 1,000, and what a pending task costs in Redis at that size.

    python bench/pending.py [--sizes 1000,10000000] [--rounds 10] [--pin same] [--json]
    python bench/pending.py --sizes 1000,1000000          # a quick run

One redis-server of the script's own (tests.servers: a free port, no persistence, no
maxmemory), never the machine's shared one. Each size is a namespace of its own in it,
filled with ``schedule_many`` (batches of 10,000 from four concurrent producers) with tasks
due at random 1 to 30 days ahead, payload ``{"user": <5 digits>}``, so that the due set is
big and its claimable head empty. Then, in rounds that visit the sizes in alternating
order (ABBA), so that the machine's ups and downs fall on every size alike, each size gets
a block of:

schedule      ``--schedule-calls`` ``App.schedule`` calls, one new task each, due 1 to 30
              days ahead: p50/p99 µs and calls a second (calls over their summed time);
schedule_many ``--many-batches`` ``App.schedule_many`` calls of 1,000 such tasks, and as
              many of 1,000 tasks due together (within one minute, 1 to 30 days ahead):
              tasks a second (the median batch);
claim         ``--claim-cycles`` cycles of: 100 tasks due now written with
              ``schedule_many`` (not timed), ``Store.claim(limit=100)`` timed (it must
              return the 100), and the 100 settled as done (``Store.settle``, timed apart);
empty claim   ``--empty-claims`` ``Store.claim(limit=100)`` calls with nothing due: an idle
              worker's look;
bare          1,000 pipelined ZADDs and HSETs of new tasks into the same keys: Redis's own
              cost of what a schedule writes, without duetime's script.

The tasks a block scheduled are removed after it (ZREM and HDEL, not timed), so every
block of a size runs against the same number of pending tasks, which is checked. Beside
each latency the script reads ``INFO commandstats`` (not timed) for the server's own time
in the scripts (EVALSHA µs a call) and commands, which tells the server's share from the
round trip's.

On a 2-core machine a round trip takes about 40 µs when Redis and the client share a CPU
and about 90 µs when they do not, and left to the kernel they switch between the two
unpredictably, which swamps a 20 % comparison. So during the measurements (not the fill) the
script pins Redis's main thread and itself to one CPU (``--pin same``, the default), or each
to one of two (``--pin split``), or leaves them (``--pin none``).

Redis doubles a hash table's bucket array when its entries reach its size, then moves one
bucket over to the new array with each operation on that key (the server's own background
rehashing serves only the keyspace, not the tables inside a hash or sorted set). A size
just past a power of two, as 10,000,000 is past 2**23, is left part-way, the old array
kept, and every operation pays a step. So the rounds run "as filled" first; then, if any
table is still part-way, the script reads the keys (HEXISTS and ZSCORE of a missing id,
in a Lua loop) until it is done, and runs the rounds again ("rehashed").

Memory: Redis's ``used_memory`` (and RSS) before and after a size's fill, over the tasks
written, with the stored record's and id's bytes, the hash tables' bucket arrays (``DEBUG
HTSTATS-KEY``), and what finishing the rehash freed. The fill's connections are closed
before the second reading, and a warm-up namespace runs every command first: Redis
allocates a latency histogram for each command the first time it runs.

Prints tables: the figures per size, and each size's over the smallest's (the issue wants
latencies flat within 20 %). ``--json`` prints JSON instead; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import gc
import json
import os
import random
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

import redis.asyncio as aredis  # noqa: E402
from tests.servers import RedisServer  # noqa: E402

import duetime  # noqa: E402
from duetime.model import DEFAULT_LEASE, DEFAULT_LOOKAHEAD, DEFAULT_MAX_STALLS  # noqa: E402
from duetime.stores.base import Outcome  # noqa: E402
from duetime.stores.redis.keys import type_keys  # noqa: E402

TYPE = "work"
DAY_S = 86_400.0
#: The fill: tasks per schedule_many call, and calls in flight at once.
FILL_BATCH = 10_000
FILL_PRODUCERS = 4
#: Tasks per schedule_many batch measured, and tasks due now per claim.
MANY = 1_000
CLAIM = 100
#: A worker's claim settings: its defaults.
LEASE_MS = int(DEFAULT_LEASE.total_seconds() * 1000)
LOOKAHEAD_MS = int(DEFAULT_LOOKAHEAD.total_seconds() * 1000)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def payload(i: int) -> dict[str, int]:
    """A small realistic payload, of the same length for every task."""
    return {"user": 10_000 + i % 90_000}


def later(rng: random.Random) -> timedelta:
    """A delay of 1 to 30 days."""
    return timedelta(seconds=rng.uniform(DAY_S, 30 * DAY_S))


def percentile(ordered: list[float], p: float) -> float:
    """The p-th fraction of sorted values, as bench/bench.py reads its p99."""
    return ordered[max(int(len(ordered) * p) - 1, 0)]


def new_app(url: str, namespace: str) -> duetime.App:
    app = duetime.App(url, namespace=namespace)
    app.declare(TYPE)
    return app


@dataclass
class Pending:
    """One size: its namespace, app and the samples of its blocks."""

    size: int
    namespace: str
    app: duetime.App
    store: Any = None
    samples: dict[str, list[float]] = field(default_factory=dict)
    server: dict[str, list[float]] = field(default_factory=dict)
    memory: dict[str, Any] = field(default_factory=dict)
    fill_s: float = 0.0

    def add(self, kind: str, values: list[float], server_us: list[float]) -> None:
        self.samples.setdefault(kind, []).extend(values)
        self.server.setdefault(kind, []).extend(server_us)


async def command_stats(client: aredis.Redis) -> dict[str, tuple[int, int]]:
    """(calls, µs) so far of the server's EVALSHA (the scripts' own time), ZADD and HSET."""
    stats = await client.info("commandstats")
    return {
        name: (int(stat.get("calls", 0)), int(stat.get("usec", 0)))
        for name in ("evalsha", "zadd", "hset")
        for stat in [stats.get(f"cmdstat_{name}", {})]
    }


def server_us(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]], name: str = "evalsha"
) -> float:
    """Server µs per call of a command between two readings of command_stats()."""
    calls = after[name][0] - before[name][0]
    return (after[name][1] - before[name][1]) / calls if calls else 0.0


async def hash_tables(client: aredis.Redis, key: str) -> list[int]:
    """The sizes of a hash table's bucket arrays (two while it is being rehashed)."""
    text = await client.execute_command("DEBUG", "HTSTATS-KEY", key)  # type: ignore[no-untyped-call]
    text = text.decode() if isinstance(text, bytes) else str(text)
    return [int(n) for n in re.findall(r"table size: (\d+)", text)]


#: Reads a member of a hash (HEXISTS) or sorted set (ZSCORE) ARGV[1] times: each read of a
#: hash table that is being rehashed moves one more bucket over.
STEP_REHASH = """
for _ = 1, tonumber(ARGV[1]) do
  redis.call(ARGV[2], KEYS[1], 'no such id')
end
"""


async def finish_rehash(client: aredis.Redis, key: str, command: str) -> int:
    """Read ``key`` until its hash table has one bucket array; returns the reads made."""
    reads = 0
    while len(await hash_tables(client, key)) > 1:
        await client.eval(STEP_REHASH, 1, key, 1_000_000, command)
        reads += 1_000_000
    return reads


async def memory(client: aredis.Redis) -> tuple[int, int]:
    info = await client.info("memory")
    return int(info["used_memory"]), int(info["used_memory_rss"])


async def remove(client: aredis.Redis, namespace: str, ids: list[str]) -> None:
    """Take tasks a block wrote out again (not timed), so that the size stays put."""
    keys = type_keys(namespace, TYPE)
    async with client.pipeline(transaction=False) as pipe:
        pipe.zrem(keys.due, *ids)
        pipe.hdel(keys.data, *ids)
        await pipe.execute()


async def fill(url: str, client: aredis.Redis, p: Pending, rng: random.Random) -> None:
    """Write p.size pending tasks with schedule_many from a few concurrent producers, and
    read what they cost in memory."""
    await asyncio.sleep(0.2)  # connections closed just before are gone from the server
    used0, rss0 = await memory(client)
    app = new_app(url, p.namespace)
    await app.open()
    written = 0
    next_report = 500_000
    t0 = time.perf_counter()

    async def producer(first: int, stride: int) -> None:
        nonlocal written, next_report
        for start in range(first, p.size, stride):
            end = min(start + FILL_BATCH, p.size)
            await app.schedule_many(
                duetime.Task(TYPE, f"p{i}", delay=later(rng), payload=payload(i))
                for i in range(start, end)
            )
            written += end - start
            if written >= next_report:
                rate = written / (time.perf_counter() - t0)
                log(f"  filling {p.size:,}: {written:,} ({rate:,.0f} tasks/s)")
                next_report += 500_000

    producers = min(FILL_PRODUCERS, -(-p.size // FILL_BATCH))
    stride = FILL_BATCH * producers
    await asyncio.gather(*(producer(n * FILL_BATCH, stride) for n in range(producers)))
    p.fill_s = time.perf_counter() - t0
    await app.close()
    await asyncio.sleep(0.2)
    used1, rss1 = await memory(client)
    keys = type_keys(p.namespace, TYPE)
    count = await client.zcard(keys.due)
    if count != p.size:
        raise RuntimeError(f"{p.namespace}: {count:,} tasks pending, not {p.size:,}")
    tables = {
        "data": await hash_tables(client, keys.data),
        "due": await hash_tables(client, keys.due),
    }
    p.memory = {
        "used_bytes_per_task": (used1 - used0) / p.size,
        "rss_bytes_per_task": (rss1 - rss0) / p.size,
        "used_memory_bytes": used1 - used0,
        "record_bytes": await client.hstrlen(keys.data, "p0"),
        "id_bytes": len(f"p{p.size - 1}"),
        "hash_tables": tables,
        "bucket_bytes_per_task": 8 * sum(map(sum, tables.values())) / p.size,
    }
    log(
        f"  filled {p.size:,} in {p.fill_s:.1f} s ({p.size / p.fill_s:,.0f} tasks/s):"
        f" {p.memory['used_bytes_per_task']:.1f} B a task (used_memory),"
        f" hash tables {tables}"
    )


async def warm_up(url: str, client: aredis.Redis) -> None:
    """Run every command the measurements use once, in a namespace of its own, so that the
    latency histograms Redis allocates on a command's first run fall before the fills."""
    app = new_app(url, "w9warm")
    store = await app.open()
    p = Pending(0, "w9warm", app, store)
    rng = random.Random(0)
    await app.schedule_many(duetime.Task(TYPE, f"p{i}", delay=later(rng)) for i in range(200))
    await schedule_block(client, p, rng, "warm", 20)
    await many_block(client, p, rng, "warm", 1)
    await claim_block(client, p, "warm", 2)
    await empty_block(client, p, 5)
    await bare_block(client, p, rng, "warm")
    await hash_tables(client, type_keys("w9warm", TYPE).data)
    await client.hstrlen(type_keys("w9warm", TYPE).data, "p0")
    await app.close()


async def schedule_block(
    client: aredis.Redis, p: Pending, rng: random.Random, tag: str, calls: int
) -> None:
    app, ids, lat = p.app, [f"s{tag}.{i}" for i in range(calls)], []
    delays = [later(rng) for _ in ids]
    before = await command_stats(client)
    for i, (task_id, delay) in enumerate(zip(ids, delays, strict=True)):
        t0 = time.perf_counter_ns()
        await app.schedule(TYPE, task_id, delay=delay, payload=payload(i))
        lat.append((time.perf_counter_ns() - t0) / 1000)
    p.add("schedule", lat, [server_us(before, await command_stats(client))])
    await remove(client, p.namespace, ids)


async def many_block(
    client: aredis.Redis, p: Pending, rng: random.Random, tag: str, batches: int
) -> None:
    """Batches of MANY new tasks, each batch twice: due at random over the month (as the
    pending tasks), and due together (within one minute, 1 to 30 days ahead)."""
    for b in range(batches):
        for kind in ("schedule_many", "schedule_many_together"):
            ids = [f"m{tag}.{b}.{kind[-1]}{i}" for i in range(MANY)]
            ahead = later(rng)
            delays = [
                later(rng)
                if kind == "schedule_many"
                else ahead + timedelta(seconds=rng.uniform(0, 60))
                for _ in ids
            ]
            tasks = [
                duetime.Task(TYPE, t, delay=d, payload=payload(i))
                for i, (t, d) in enumerate(zip(ids, delays, strict=True))
            ]
            before = await command_stats(client)
            t0 = time.perf_counter_ns()
            await p.app.schedule_many(tasks)
            elapsed = (time.perf_counter_ns() - t0) / 1000
            # one script call of MANY tasks: the server's time per task
            p.add(kind, [elapsed], [server_us(before, await command_stats(client)) / MANY])
            await remove(client, p.namespace, ids)


async def claim_block(client: aredis.Redis, p: Pending, tag: str, cycles: int) -> None:
    app, store = p.app, p.store
    claim_lat, claim_srv, settle_lat, settle_srv = [], [], [], []
    for c in range(cycles):
        await app.schedule_many(
            duetime.Task(TYPE, f"c{tag}.{c}.{i}", delay=timedelta(0), payload=payload(i))
            for i in range(CLAIM)
        )
        s0 = await command_stats(client)
        t0 = time.perf_counter_ns()
        batch = await claim(p)
        claim_lat.append((time.perf_counter_ns() - t0) / 1000)
        s1 = await command_stats(client)
        if len(batch.claims) != CLAIM:
            raise RuntimeError(f"{p.namespace}: claimed {len(batch.claims)}, not {CLAIM}")
        outcomes = [Outcome("done", claim) for claim in batch.claims]
        t0 = time.perf_counter_ns()
        kept = await store.settle(TYPE, outcomes, app.clock.now_ms())
        settle_lat.append((time.perf_counter_ns() - t0) / 1000)
        s2 = await command_stats(client)
        if not all(kept):
            raise RuntimeError(f"{p.namespace}: {kept.count(False)} outcomes not kept")
        claim_srv.append(server_us(s0, s1))
        settle_srv.append(server_us(s1, s2))
    p.add("claim", claim_lat, claim_srv)
    p.add("settle", settle_lat, settle_srv)


async def claim(p: Pending) -> Any:
    """One claim of up to CLAIM tasks, as a worker makes it."""
    return await p.store.claim(
        TYPE,
        now_ms=p.app.clock.now_ms(),
        limit=CLAIM,
        lease_ms=LEASE_MS,
        max_stalls=DEFAULT_MAX_STALLS,
        at_most_once=False,
        lookahead_ms=LOOKAHEAD_MS,
    )


async def empty_block(client: aredis.Redis, p: Pending, calls: int) -> None:
    lat: list[float] = []
    before = await command_stats(client)
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        batch = await claim(p)
        lat.append((time.perf_counter_ns() - t0) / 1000)
        if batch.claims:
            raise RuntimeError(f"{p.namespace}: an empty claim found {len(batch.claims)} tasks")
    p.add("empty_claim", lat, [server_us(before, await command_stats(client))])


async def bare_block(client: aredis.Redis, p: Pending, rng: random.Random, tag: str) -> None:
    """Redis's own cost of what a schedule writes: MANY pipelined ZADDs and HSETs of new
    tasks into the same two keys, server µs a command from commandstats."""
    keys = type_keys(p.namespace, TYPE)
    ids = [f"b{tag}.{i}" for i in range(MANY)]
    now_ms = p.app.clock.now_ms()
    async with client.pipeline(transaction=False) as pipe:
        for i, task_id in enumerate(ids):
            pipe.zadd(keys.due, {task_id: now_ms + int(later(rng).total_seconds() * 1000)})
            pipe.hset(keys.data, task_id, json.dumps({"p": payload(i)}, separators=(",", ":")))
        before = await command_stats(client)
        await pipe.execute()
    after = await command_stats(client)
    p.add("bare_zadd", [], [server_us(before, after, "zadd")])
    p.add("bare_hset", [], [server_us(before, after, "hset")])
    await remove(client, p.namespace, ids)


async def measure(client: aredis.Redis, p: Pending, args: argparse.Namespace, tag: str) -> None:
    rng = random.Random(f"{tag}/{p.size}")
    await schedule_block(client, p, rng, tag, args.schedule_calls)
    await many_block(client, p, rng, tag, args.many_batches)
    await claim_block(client, p, tag, args.claim_cycles)
    await empty_block(client, p, args.empty_claims)
    await bare_block(client, p, rng, tag)
    count = await client.zcard(type_keys(p.namespace, TYPE).due)
    if count != p.size:
        raise RuntimeError(f"{p.namespace}: {count:,} pending after round {tag}, not {p.size:,}")


def summary(p: Pending) -> dict[str, Any]:
    """A size's figures from the samples of one phase's rounds."""
    out: dict[str, Any] = {"size": p.size}
    for kind, values in p.samples.items():
        ordered, srv = sorted(values), statistics.median(p.server[kind])
        if not ordered:  # the bare commands: server time only
            out[kind] = {"server_us": srv}
        elif kind.startswith("schedule_many"):
            out[kind] = {
                "batches": len(ordered),
                "tasks_per_s": MANY / statistics.median(ordered) * 1e6,
                "p50_us": statistics.median(ordered),
                "max_us": ordered[-1],
                "server_us_per_task": srv,
            }
        else:
            out[kind] = {
                "calls": len(ordered),
                "p50_us": statistics.median(ordered),
                "p99_us": percentile(ordered, 0.99),
                "max_us": ordered[-1],
                "calls_per_s": len(ordered) / sum(ordered) * 1e6,
                "server_us": srv,
            }
    return out


#: (label, kind, field) of each figure compared across sizes.
COMPARED = [
    ("schedule p50", "schedule", "p50_us"),
    ("schedule p99", "schedule", "p99_us"),
    ("schedule calls/s", "schedule", "calls_per_s"),
    ("schedule server µs", "schedule", "server_us"),
    ("schedule_many tasks/s", "schedule_many", "tasks_per_s"),
    ("schedule_many server µs/task", "schedule_many", "server_us_per_task"),
    ("together tasks/s", "schedule_many_together", "tasks_per_s"),
    ("together server µs/task", "schedule_many_together", "server_us_per_task"),
    ("claim p50", "claim", "p50_us"),
    ("claim p99", "claim", "p99_us"),
    ("claim server µs", "claim", "server_us"),
    ("empty claim p50", "empty_claim", "p50_us"),
    ("empty claim p99", "empty_claim", "p99_us"),
    ("empty claim server µs", "empty_claim", "server_us"),
    ("settle p50", "settle", "p50_us"),
    ("settle p99", "settle", "p99_us"),
    ("settle server µs", "settle", "server_us"),
    ("bare zadd server µs", "bare_zadd", "server_us"),
    ("bare hset server µs", "bare_hset", "server_us"),
]


def ratios(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each larger size's figures over the smallest's."""
    base = results[0]
    return [
        {
            "size": r["size"],
            "against": base["size"],
            **{label: r[kind][key] / base[kind][key] for label, kind, key in COMPARED},
        }
        for r in results[1:]
    ]


def pair(a: float, b: float, digits: int) -> str:
    return f"{a:.{digits}f} / {b:.{digits}f}"


#: The client's figures: (header, a size's cell, a ratio's cell).
CLIENT_COLUMNS: list[tuple[str, Any, Any]] = [
    (
        "schedule µs p50 / p99",
        lambda r: pair(r["schedule"]["p50_us"], r["schedule"]["p99_us"], 1),
        lambda q: pair(q["schedule p50"], q["schedule p99"], 2),
    ),
    (
        "calls/s",
        lambda r: f"{r['schedule']['calls_per_s']:,.0f}",
        lambda q: f"{q['schedule calls/s']:.2f}",
    ),
    (
        "schedule_many tasks/s",
        lambda r: f"{r['schedule_many']['tasks_per_s']:,.0f}",
        lambda q: f"{q['schedule_many tasks/s']:.2f}",
    ),
    (
        "due together",
        lambda r: f"{r['schedule_many_together']['tasks_per_s']:,.0f}",
        lambda q: f"{q['together tasks/s']:.2f}",
    ),
    (
        "claim 100 ms p50 / p99",
        lambda r: pair(r["claim"]["p50_us"] / 1000, r["claim"]["p99_us"] / 1000, 3),
        lambda q: pair(q["claim p50"], q["claim p99"], 2),
    ),
    (
        "empty claim µs p50 / p99",
        lambda r: pair(r["empty_claim"]["p50_us"], r["empty_claim"]["p99_us"], 1),
        lambda q: pair(q["empty claim p50"], q["empty claim p99"], 2),
    ),
    (
        "settle 100 ms p50 / p99",
        lambda r: pair(r["settle"]["p50_us"] / 1000, r["settle"]["p99_us"] / 1000, 3),
        lambda q: pair(q["settle p50"], q["settle p99"], 2),
    ),
]

#: The server's time (commandstats, median of the blocks), µs a call or a task.
SERVER_COLUMNS: list[tuple[str, Any, Any]] = [
    (header, lambda r, k=kind, f=key: f"{r[k][f]:.2f}", lambda q, lb=label: f"{q[lb]:.2f}")
    for header, kind, key, label in [
        ("schedule", "schedule", "server_us", "schedule server µs"),
        ("many, a task", "schedule_many", "server_us_per_task", "schedule_many server µs/task"),
        (
            "together, a task",
            "schedule_many_together",
            "server_us_per_task",
            "together server µs/task",
        ),
        ("claim 100", "claim", "server_us", "claim server µs"),
        ("empty claim", "empty_claim", "server_us", "empty claim server µs"),
        ("settle 100", "settle", "server_us", "settle server µs"),
        ("bare ZADD", "bare_zadd", "server_us", "bare zadd server µs"),
        ("bare HSET", "bare_hset", "server_us", "bare hset server µs"),
    ]
]


def table(phase: dict[str, Any], columns: list[tuple[str, Any, Any]]) -> None:
    rows = [["pending"] + [header for header, _, _ in columns]]
    rows += [[f"{r['size']:,}"] + [cell(r) for _, cell, _ in columns] for r in phase["sizes"]]
    rows += [[f"÷ {q['against']:,}"] + [cell(q) for _, _, cell in columns] for q in phase["ratios"]]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(" | ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)))


def show_phase(phase: dict[str, Any]) -> None:
    print(f"{phase['phase']}: latency at the client")
    table(phase, CLIENT_COLUMNS)
    print(f"{phase['phase']}: the server's time in the scripts and commands, µs")
    table(phase, SERVER_COLUMNS)
    print()


def show_memory(memory: list[dict[str, Any]]) -> None:
    print(
        f"{'pending':>12} | {'fill s':>6} {'tasks/s':>8} | {'B/task':>6} {'rss':>5}"
        f" {'rehashed':>8} | record B  id B | hash tables as filled (records; due set)"
    )
    for m in memory:
        tables = "; ".join(
            " + ".join(f"{n:,}" for n in m["hash_tables"][k]) for k in ("data", "due")
        )
        rehashed = m.get("rehashed_used_bytes_per_task")
        print(
            f"{m['size']:>12,} | {m['fill_s']:6.1f} {m['fill_per_s']:8,.0f}"
            f" | {m['used_bytes_per_task']:6.1f} {m['rss_bytes_per_task']:5.0f}"
            f" {'' if rehashed is None else format(rehashed, '.1f'):>8}"
            f" | {m['record_bytes']:8} {m['id_bytes']:5} | {tables}"
            f" ({m['bucket_bytes_per_task']:.1f} B/task of buckets)"
        )


def pin(how: str, server_pid: int) -> dict[str, list[int]]:
    """Pin the redis-server's main thread and this process's to CPUs, for the measurements
    (not the fill, which uses every CPU): "same" puts both on one CPU, "split" each on one
    of two, "none" leaves them to the kernel. Returns the CPUs each was given."""
    cpus = sorted(os.sched_getaffinity(0))
    if how == "none" or len(cpus) < 2 and how == "split":
        return {}
    mine, server = (cpus[-1], cpus[-1]) if how == "same" else (cpus[-1], cpus[-2])
    os.sched_setaffinity(server_pid, {server})
    os.sched_setaffinity(0, {mine})
    return {"redis": [server], "bench": [mine]}


async def rounds(
    client: aredis.Redis, pending: list[Pending], args: argparse.Namespace, phase: str
) -> dict[str, Any]:
    """args.rounds rounds of every size's blocks, the sizes in ABBA order."""
    for p in pending:
        p.samples.clear()
        p.server.clear()
    started = time.perf_counter()
    for rnd in range(args.rounds):
        for p in pending if rnd % 2 == 0 else pending[::-1]:
            await measure(client, p, args, f"{phase[:1]}{rnd}")
        log(f"{phase}: round {rnd + 1}/{args.rounds} done")
    results = [summary(p) for p in pending]
    return {
        "phase": phase,
        "seconds": time.perf_counter() - started,
        "sizes": results,
        "ratios": ratios(results),
    }


async def rehash(client: aredis.Redis, pending: list[Pending]) -> bool:
    """Finish the rehashing of every size's hash tables that a fill left part-way, and
    note each size's memory after it. Returns whether there was any."""
    any_done = False
    for p in pending:
        keys = type_keys(p.namespace, TYPE)
        used0, _ = await memory(client)
        reads = await finish_rehash(client, keys.data, "HEXISTS")
        reads += await finish_rehash(client, keys.due, "ZSCORE")
        if reads:
            used1, _ = await memory(client)
            freed = (used0 - used1) / p.size
            p.memory["rehash_reads"] = reads
            p.memory["rehashed_used_bytes_per_task"] = p.memory["used_bytes_per_task"] - freed
            log(f"  rehashed {p.size:,}: {reads:,} reads freed {freed:.1f} B a task")
            any_done = True
    return any_done


async def run(url: str, server_pid: int, args: argparse.Namespace) -> dict[str, Any]:
    client = aredis.Redis.from_url(url)
    await warm_up(url, client)
    sizes = sorted({int(s) for s in args.sizes.split(",")})
    pending = [Pending(n, f"w9n{n}", new_app(url, f"w9n{n}")) for n in sizes]
    rng = random.Random(args.seed)
    started = time.perf_counter()
    for p in pending:
        log(f"filling {p.size:,} pending tasks")
        await fill(url, client, p, rng)
    fill_s = time.perf_counter() - started
    for p in pending:  # a round as warm-up: connections, scripts, caches
        p.store = await p.app.open()
        await measure(client, p, args, "warm")
    gc.collect()
    gc.freeze()
    cpus = sorted(os.sched_getaffinity(0))
    pinned = pin(args.pin, server_pid)
    started = time.perf_counter()
    phases = [await rounds(client, pending, args, "as filled")]
    if await rehash(client, pending):
        phases.append(await rounds(client, pending, args, "rehashed"))
    measure_s = time.perf_counter() - started
    os.sched_setaffinity(0, cpus)
    for p in pending:
        await p.app.close()
    server = await client.info("server")
    await client.aclose()
    return {
        "redis_version": server["redis_version"],
        "rounds": args.rounds,
        "pin": args.pin,
        "pinned": pinned,
        "fill_s": fill_s,
        "measure_s": measure_s,
        "memory": [
            {"size": p.size, "fill_s": p.fill_s, "fill_per_s": p.size / p.fill_s, **p.memory}
            for p in pending
        ],
        "phases": phases,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,10000000", help="pending tasks, comma-separated")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--schedule-calls", type=int, default=500, help="a block's, a size's")
    parser.add_argument("--many-batches", type=int, default=2, help="a block's, a size's")
    parser.add_argument("--claim-cycles", type=int, default=50, help="a block's, a size's")
    parser.add_argument("--empty-claims", type=int, default=100, help="a block's, a size's")
    parser.add_argument(
        "--pin",
        choices=("same", "split", "none"),
        default="same",
        help="during the measurements, Redis and this process on one CPU (the default), on"
        " two, or where the kernel puts them",
    )
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    args = parser.parse_args()
    compileall.compile_dir(ROOT / "src", quiet=1)  # as bench/bench.py: see its docstring
    with RedisServer() as server:
        assert server.proc is not None
        result = asyncio.run(run(server.url, server.proc.pid, args))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for phase in result["phases"]:
            show_phase(phase)
        show_memory(result["memory"])
        print(
            f"\nRedis {result['redis_version']}; fill {result['fill_s']:.0f} s,"
            f" measurements {result['measure_s']:.0f} s ({result['rounds']} rounds,"
            f" pinned: {result['pinned'] or 'no'})"
        )


if __name__ == "__main__":
    main()
