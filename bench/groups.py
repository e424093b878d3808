"""What a grouped claim costs, against the backlog one group holds.

    python bench/groups.py --stores postgres    # the tests' server, 127.0.0.1:5432
    python bench/groups.py --stores postgres --backlogs 1000,100000,1000000
    python bench/groups.py --stores redis,sqlite

For each store and each backlog N, in a namespace (and for SQLite a file) of its own, a type
gets N tasks in group A, due a minute ago, written with ``Store.schedule`` in batches of
10,000 (the bulk path). Then ``--rounds`` rounds, each: write ``--batch`` / 10 tasks due now
in each of 9 other groups, and time one ``Store.claim(limit=--batch)`` under group limits
far above the batch (``Gate(group_running=1000)``), round trip included: 10 groups with due
work, each gives its turn's share (a tenth of the batch), so the claim must take
``--batch`` tasks, a tenth of them from A; then settle them as done. The median and the worst
round are printed: they must not grow with N (a claim never reads past a group's first
tasks).

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
from duetime.stores.gating import Gate  # noqa: E402

RECORD = Record('{"pad":"' + "x" * 80 + '"}').encode()
WRITE_BATCH = 10_000
GATE = Gate(group_running=1000)
OTHERS = [f"g{n}" for n in range(1, 10)]


async def measure(store: Store, backlog: int, args: Any) -> str:
    task_type = f"b{uuid.uuid4().hex[:8]}"
    now = int(await store.time_ms())
    began = time.perf_counter()
    for start in range(0, backlog, WRITE_BATCH):
        count = min(WRITE_BATCH, backlog - start)
        tasks = [NewTask(f"a{start + k}", now - 60_000, RECORD, 0, "A") for k in range(count)]
        await store.schedule(task_type, tasks)
    setup = time.perf_counter() - began
    times = []
    share = args.batch // 10
    for r in range(args.rounds):
        now = int(await store.time_ms())
        fresh = [
            NewTask(f"r{r}-{g}-{k}", now - 1, RECORD, 0, g) for g in OTHERS for k in range(share)
        ]
        await store.schedule(task_type, fresh)
        t0 = time.perf_counter()
        batch = await store.claim(
            task_type,
            now_ms=now,
            limit=args.batch,
            lease_ms=60_000,
            max_stalls=3,
            at_most_once=False,
            gate=GATE,
        )
        times.append((time.perf_counter() - t0) * 1000)
        from_a = sum(1 for c in batch.claims if c.id[0] == "a")
        assert len(batch.claims) == args.batch and from_a == share, (len(batch.claims), from_a)
        await store.settle(task_type, [Outcome("done", c) for c in batch.claims], now)
    return (
        f"backlog {backlog:>9,} in one group  setup {setup:6.1f} s  claim of {args.batch} "
        f"from 10 groups: median {statistics.median(times):7.2f} ms  worst {max(times):7.2f} ms"
    )


async def run(url: str, args: Any) -> None:
    for backlog in args.backlogs:
        app = duetime.App(url, namespace=f"b{uuid.uuid4().hex[:10]}")
        store = await app.open()
        try:
            print(await measure(store, backlog, args), flush=True)
        finally:
            await app.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="postgres")
    parser.add_argument("--backlogs", default="1000,100000,1000000")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--batch", type=int, default=100)
    args = parser.parse_args()
    args.backlogs = [int(n) for n in args.backlogs.split(",")]
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
