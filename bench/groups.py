"""What a claim under group limits costs, against the backlog one group holds.

    python bench/groups.py                                   # Redis, SQLite, PostgreSQL
    python bench/groups.py --stores sqlite                   # 1,000 to 1,000,000
    python bench/groups.py --stores sqlite,postgres --backlogs 1000,100000 --cases share
    python bench/groups.py --stores sqlite --sqlite-query synchronous=normal   # no fsync

For each store and each backlog N, in a namespace (and for SQLite a file) of its own, a type
gets N tasks of one group ("big", due a minute ago), written with ``Store.schedule`` in
batches of 10,000 (the store's bulk path), then ``--rounds`` rounds, each: write
``--batch`` / 10 tasks due now in each of the other groups, and time one
``Store.claim(limit=--batch)`` (round trip included), which must take what the case says;
then settle them as done. The median and the worst round are printed, per case:

share     the big group and 9 others (group_concurrency 1,000): 10 groups with due work, so
          the claim takes a tenth of the batch from each, the big group no more than its
          turn, whatever it holds.
at-limit  the big group at its group_concurrency (10 of its tasks running) and 10 others:
          the claim passes over the big group without reading its backlog and takes the
          batch from the others.
plain     the same tasks as share, claimed without group limits (the earliest due: the big
          group's while they last): today's claim, for comparison on the same machine.

None may grow with N. Redis runs as a redis-server this script starts on a free port (no
persistence); PostgreSQL is the tests' server (tests/postgres.py), in a schema of its own,
dropped after.
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

import duetime  # noqa: E402
from duetime.record import Record  # noqa: E402
from duetime.stores.base import NewTask, Outcome, Store  # noqa: E402
from duetime.stores.gating import Gate  # noqa: E402

RECORD = Record('{"pad":"' + "x" * 80 + '"}').encode()
WRITE_BATCH = 10_000
LEASE_MS = 600_000
#: (name, group_concurrency (0: no group limits), groups besides the big one, the big
#: group's share of a claim (None: not checked))
CASES = (("share", 1000, 9, 10), ("at-limit", 10, 10, 0), ("plain", 0, 9, None))


async def claim(store: Store, task_type: str, now: int, limit: int, gate: Gate | None) -> list[Any]:
    batch = await store.claim(
        task_type,
        now_ms=now,
        limit=limit,
        lease_ms=LEASE_MS,
        max_stalls=3,
        at_most_once=False,
        gate=gate,
    )
    return batch.claims


async def measure(
    store: Store, case: tuple[str, int, int, int | None], backlog: int, args: Any
) -> str:
    name, most, others, big_share = case
    gate = Gate(group_running=most) if most else None
    task_type = f"b{uuid.uuid4().hex[:8]}"
    now = int(await store.time_ms())
    began = time.perf_counter()
    for start in range(0, backlog, WRITE_BATCH):
        count = min(WRITE_BATCH, backlog - start)
        tasks = [
            NewTask(f"big{start + k}", now - 60_000 + (start + k) // 1000, RECORD, 0, "big")
            for k in range(count)
        ]
        await store.schedule(task_type, tasks)
    setup = time.perf_counter() - began
    if big_share == 0 and gate is not None:  # the big group at its limit: some of it runs
        running = await claim(store, task_type, now, most, gate)
        assert len(running) == most, len(running)
    times = []
    limit = args.batch
    for r in range(args.rounds):
        now = int(await store.time_ms())
        fresh = [
            NewTask(f"r{r}-{g}-{k}", now - 1, RECORD, 0, f"g{g}")
            for g in range(others)
            for k in range(limit // 10)
        ]
        await store.schedule(task_type, fresh)
        t0 = time.perf_counter()
        claims = await claim(store, task_type, now, limit, gate)
        times.append((time.perf_counter() - t0) * 1000)
        from_big = sum(1 for c in claims if c.id.startswith("big"))
        assert len(claims) == limit, (name, len(claims))
        assert big_share is None or from_big == big_share * limit // 100, (name, from_big)
        await store.settle(task_type, [Outcome("done", c) for c in claims], now)
    return (
        f"{name:9} backlog {backlog:>9,}  setup {setup:6.1f} s  claim of {limit}: "
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
    parser.add_argument(
        "--stores", default="redis,sqlite,postgres", help="of redis, sqlite, postgres"
    )
    parser.add_argument("--backlogs", default="1000,100000,1000000")
    parser.add_argument("--cases", default="", help="comma-separated case names (default all)")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--batch", type=int, default=100, help="a multiple of 10")
    parser.add_argument("--sqlite-query", default="", help="the SQLite URL's query string")
    args = parser.parse_args()
    args.backlogs = [int(n) for n in args.backlogs.split(",")]
    args.cases = [c for c in args.cases.split(",") if c]
    for store in args.stores.split(","):
        print(f"-- {store}", flush=True)
        if store == "redis":
            from tests.servers import RedisServer

            with RedisServer() as server:
                asyncio.run(run(server.url, args))
        elif store == "sqlite":
            with tempfile.TemporaryDirectory() as folder:
                query = f"?{args.sqlite_query}" if args.sqlite_query else ""
                asyncio.run(run(f"sqlite:///{Path(folder) / 'bench.db'}{query}", args))
        elif store == "postgres":
            from tests.postgres import fresh_schema

            with fresh_schema() as url:
                asyncio.run(run(url, args))
        else:
            raise SystemExit(f"unknown store {store!r}")


if __name__ == "__main__":
    main()
