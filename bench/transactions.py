"""What scheduling in the application's transaction costs (docs/transactions.md): a
transaction that inserts one application row and schedules 1 or 100 tasks with
``connection=``, against the same transaction inserting only that row, on PostgreSQL and
SQLite; the overhead per task, in microseconds (the median of rounds).

    python bench/transactions.py                      # both stores
    python bench/transactions.py --stores sqlite --transactions 200
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path

import psycopg

import duetime

HOUR = timedelta(hours=1)
SERVER = "postgresql://postgres@127.0.0.1:5432/test"


async def postgres(transactions: int, per: int) -> tuple[float, float]:
    schema = "bench_" + uuid.uuid4().hex[:8]
    app = duetime.App(f"{SERVER}?schema={schema}", namespace="bench")
    app.declare("mail")
    await app.open()
    try:
        async with await psycopg.AsyncConnection.connect(SERVER) as conn:
            await conn.execute(f"CREATE TABLE {schema}.rows (id text)")
            await conn.commit()

            async def one(n: int, tasks: bool) -> None:
                async with conn.transaction():
                    await conn.execute(f"INSERT INTO {schema}.rows VALUES (%s)", (str(n),))
                    if tasks and per == 1:
                        await app.schedule("mail", f"t{n}", delay=3600, connection=conn)
                    elif tasks:
                        batch = [duetime.Task("mail", f"t{n}-{i}", delay=HOUR) for i in range(per)]
                        await app.schedule_many(batch, connection=conn)

            return await _measure(one, transactions)
    finally:
        await app.close()
        async with await psycopg.AsyncConnection.connect(SERVER, autocommit=True) as conn:
            await conn.execute(f"DROP SCHEMA {schema} CASCADE")


async def sqlite(transactions: int, per: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.db"
        app = duetime.App(f"sqlite:///{path}", namespace="bench")
        app.declare("mail")
        await app.open()
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE rows (id TEXT)")
        db.commit()
        try:

            async def one(n: int, tasks: bool) -> None:
                with db:
                    db.execute("INSERT INTO rows VALUES (?)", (str(n),))
                    if tasks and per == 1:
                        await app.schedule("mail", f"t{n}", delay=3600, connection=db)
                    elif tasks:
                        batch = [duetime.Task("mail", f"t{n}-{i}", delay=HOUR) for i in range(per)]
                        await app.schedule_many(batch, connection=db)

            return await _measure(one, transactions)
        finally:
            db.close()
            await app.close()


async def _measure(
    one: Callable[[int, bool], Awaitable[None]], transactions: int
) -> tuple[float, float]:
    """Seconds per transaction: (the row alone, the row and the tasks), rounds alternating."""
    alone: list[float] = []
    both: list[float] = []
    n = 0
    for _ in range(5):
        for tasks, out in ((False, alone), (True, both)):
            start = time.perf_counter()
            for _ in range(transactions):
                n += 1
                await one(n, tasks)
            out.append((time.perf_counter() - start) / transactions)
    return statistics.median(alone), statistics.median(both)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="postgres,sqlite")
    parser.add_argument("--transactions", type=int, default=100)
    args = parser.parse_args()
    for store in args.stores.split(","):
        run = postgres if store == "postgres" else sqlite
        for per in (1, 100):
            alone, both = asyncio.run(run(args.transactions, per))
            extra = (both - alone) / per * 1e6
            print(
                f"{store:8} {per:3} task(s)/transaction: row alone {alone * 1e6:8.0f} µs, "
                f"row and tasks {both * 1e6:8.0f} µs: {extra:6.0f} µs a task"
            )


if __name__ == "__main__":
    main()
