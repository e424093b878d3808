"""A worker process for the ``ctx.complete`` kill test: its handler inserts a row and
completes its task in one transaction, commits, says so in a file, and hangs (the test
kills it then).

python -m tests.integration.postgres.complete_worker URL DSN TABLE SIGNAL
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import psycopg

import duetime


def main() -> None:
    url, dsn, table, signal = sys.argv[1:5]
    app = duetime.App(url, namespace="tx")

    @app.task("pay", lease=2)
    async def pay(payload: dict[str, Any], ctx: duetime.Context) -> None:
        async with await psycopg.AsyncConnection.connect(dsn) as conn:
            async with conn.transaction():
                await conn.execute(f"INSERT INTO {table} VALUES (%s)", (ctx.task_id,))
                await ctx.complete(connection=conn)
            await asyncio.to_thread(Path(signal).write_text, f"{ctx.task_id} {ctx.attempt}\n")
            await asyncio.sleep(3600)  # killed here, after the commit

    app.run(grace=1)


if __name__ == "__main__":
    main()
