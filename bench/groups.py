"""What a claim with group limits costs, against the backlog one group holds.

    python bench/groups.py                                        # Redis
    python bench/groups.py --stores redis --backlogs 1000,100000,1000000

For each store and each backlog N, in a namespace of its own, a type gets N tasks of one
group ("big"), due a minute ago, written with ``Store.schedule`` in batches of 10,000; then
``--rounds`` rounds, each: write 10 tasks due now in each of 9 other groups, and time one
``Store.claim(limit=100)`` with group limits (round trip included); then settle what it
took as done. The median and the worst round are printed, per case:

due-backlog   a group concurrency of 1,000: the claim visits the 10 groups and takes 10
              of each (the big group gets no more than its turn): 100 tasks.
held-backlog  a group concurrency of 10, 10 tasks of the big group running: the claim
              passes the big group over (at its limit) without reading its backlog, and
              takes the 9 other groups' 90 tasks.

Redis runs as a redis-server this script starts on a free port (no persistence).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
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
SMALL_GROUPS = 9
PER_SMALL = 10
LIMIT = 100
LEASE_MS = 600_000
#: (name, group concurrency, tasks of the big group claimed before the rounds, expected)
CASES = (
    ("due-backlog", 1000, 0, LIMIT),
    ("held-backlog", PER_SMALL, PER_SMALL, SMALL_GROUPS * PER_SMALL),
)


async def claim(store: Store, task_type: str, now: int, limit: int, gate: Gate) -> Any:
    return await store.claim(
        task_type,
        now_ms=now,
        limit=limit,
        lease_ms=LEASE_MS,
        max_stalls=3,
        at_most_once=False,
        gate=gate,
    )


async def measure(store: Store, case: tuple[str, int, int, int], backlog: int, args: Any) -> str:
    name, most, running, expected = case
    gate = Gate(group_running=most)
    task_type = f"b{uuid.uuid4().hex[:8]}"
    now = int(await store.time_ms())
    began = time.perf_counter()
    for start in range(0, backlog, WRITE_BATCH):
        count = min(WRITE_BATCH, backlog - start)
        tasks = [
            NewTask(f"g{start + k}", now - 60_000 + k % 1000, RECORD, 0, "big")
            for k in range(count)
        ]
        await store.schedule(task_type, tasks)
    setup = time.perf_counter() - began
    if running:
        assert len((await claim(store, task_type, now, running, gate)).claims) == running
    times = []
    for r in range(args.rounds):
        now = int(await store.time_ms())
        fresh = [
            NewTask(f"r{r}-{g}-{k}", now - 1, RECORD, 0, f"small{g}")
            for g in range(SMALL_GROUPS)
            for k in range(PER_SMALL)
        ]
        await store.schedule(task_type, fresh)
        t0 = time.perf_counter()
        batch = await claim(store, task_type, now, LIMIT, gate)
        times.append((time.perf_counter() - t0) * 1000)
        got = {c.id for c in batch.claims}
        assert len(got) == expected and {t.id for t in fresh} <= got, (name, len(got))
        await store.settle(task_type, [Outcome("done", c) for c in batch.claims], now)
    return (
        f"{name:13} backlog {backlog:>9,}  setup {setup:6.1f} s  claim of {LIMIT} over "
        f"{SMALL_GROUPS + 1} groups: median {statistics.median(times):7.2f} ms  "
        f"worst {max(times):7.2f} ms"
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
    parser.add_argument("--stores", default="redis")
    parser.add_argument("--backlogs", default="1000,100000")
    parser.add_argument("--cases", default="", help="comma-separated case names (default all)")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    args.backlogs = [int(n) for n in args.backlogs.split(",")]
    args.cases = [c for c in args.cases.split(",") if c]
    for store in args.stores.split(","):
        print(f"-- {store}", flush=True)
        if store == "redis":
            with RedisServer() as server:
                asyncio.run(run(server.url, args))
        else:
            raise SystemExit(f"unknown store {store!r} (this script knows redis)")


if __name__ == "__main__":
    main()
