"""What a claim costs with priorities, against the backlog one priority level holds.

    python bench/priorities.py                                   # Redis and SQLite
    python bench/priorities.py --stores redis --backlogs 1000,100000,1000000
    python bench/priorities.py --stores sqlite --backlogs 1000,100000
    python bench/priorities.py --stores postgres    # the tests' server, 127.0.0.1:5432

For each store and each backlog N, in a namespace (and for SQLite a file) of its own, a type
gets N tasks of one level, written with ``Store.schedule`` in batches of 10,000, then
``--rounds`` rounds, each: write ``--batch`` tasks due now of another level, and time one
``Store.claim(limit=--batch)`` (round trip included), which must take exactly those; then
settle them as done. The median and the worst round are printed, per case:

future-high  the backlog at priority 50, due in an hour; the claimed tasks at priority 0,
             due now: a claim must not read a level's tasks that are not due yet.
due-low      the backlog at priority -10, due a minute ago; the claimed tasks at priority
             10: a level above a due backlog is claimed first, without reading it.
zero-over-low  the backlog at priority -10, due a minute ago; the claimed tasks at
             priority 0. As above on Redis and SQLite. On PostgreSQL priority 0 is read
             from the due index, so this claim passes over the due tasks of priority -10
             due before the ones it takes (docs/flow.md, "Priorities"): it grows with N.
plain        no priorities at all (every task 0): the backlog due in an hour, the claimed
             tasks due now; the claim path of a type without priorities, for comparison.

Redis runs as a redis-server this script starts on a free port (no persistence);
PostgreSQL is the tests' server (tests/postgres.py), in a schema of its own, dropped after.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.servers import RedisServer  # noqa: E402

import duetime  # noqa: E402
from duetime.record import Record  # noqa: E402
from duetime.stores.base import NewTask, Outcome, Store  # noqa: E402

RECORD = Record('{"pad":"' + "x" * 80 + '"}').encode()
WRITE_BATCH = 10_000
#: (name, backlog priority, backlog due offset ms, claimed tasks' priority)
CASES = (
    ("future-high", 50, 3_600_000, 0),
    ("due-low", -10, -60_000, 10),
    ("zero-over-low", -10, -60_000, 0),
    ("plain", 0, 3_600_000, 0),
)


async def measure(store: Store, case: tuple[str, int, int, int], backlog: int, args: Any) -> str:
    name, level, offset, claimed = case
    task_type = f"b{uuid.uuid4().hex[:8]}"
    now = int(await store.time_ms())
    began = time.perf_counter()
    for start in range(0, backlog, WRITE_BATCH):
        count = min(WRITE_BATCH, backlog - start)
        tasks = [NewTask(f"g{start + k}", now + offset + k, RECORD, level) for k in range(count)]
        await store.schedule(task_type, tasks)
    setup = time.perf_counter() - began
    times = []
    for r in range(args.rounds):
        now = int(await store.time_ms())
        fresh = [NewTask(f"r{r}-{k}", now - 1, RECORD, claimed) for k in range(args.batch)]
        await store.schedule(task_type, fresh)
        t0 = time.perf_counter()
        batch = await store.claim(
            task_type,
            now_ms=now,
            limit=args.batch,
            lease_ms=60_000,
            max_stalls=3,
            at_most_once=False,
        )
        times.append((time.perf_counter() - t0) * 1000)
        got = {c.id for c in batch.claims}
        assert got == {t.id for t in fresh}, (name, len(got))
        await store.settle(task_type, [Outcome("done", c) for c in batch.claims], now)
    return (
        f"{name:14} backlog {backlog:>9,}  setup {setup:6.1f} s  claim of {args.batch}: "
        f"median {statistics.median(times):7.2f} ms  worst {max(times):7.2f} ms"
    )


async def run(url: str, args: Any) -> None:
    for backlog in args.backlogs:
        for case in CASES:
            if args.cases and case[0] not in args.cases:
                continue
            app = duetime.App(url, namespace=f"b{uuid.uuid4().hex[:10]}")
            store = await app.open()
            try:
                print(await measure(store, case, backlog, args), flush=True)
            finally:
                await app.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="redis,sqlite")
    parser.add_argument("--backlogs", default="1000,100000")
    parser.add_argument("--cases", default="", help="comma-separated case names (default all)")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--batch", type=int, default=100)
    args = parser.parse_args()
    args.backlogs = [int(n) for n in args.backlogs.split(",")]
    args.cases = [c for c in args.cases.split(",") if c]
    for store in args.stores.split(","):
        print(f"-- {store}", flush=True)
        if store == "redis":
            with RedisServer() as server:
                asyncio.run(run(server.url, args))
        elif store == "sqlite":
            with tempfile.TemporaryDirectory() as folder:
                asyncio.run(run(f"sqlite:///{Path(folder) / 'bench.db'}", args))
        elif store == "postgres":
            from tests.postgres import fresh_schema

            with fresh_schema() as url:
                asyncio.run(run(url, args))
        else:
            raise SystemExit(f"unknown store {store!r}")


if __name__ == "__main__":
    main()
