"""Send every user one email, a few at a time, from several workers: Planton's own README
example (a Node library of polling schedulers) on duetime and PostgreSQL.

A poller's scheduler picks the users still waiting for their email with Planton's query,
an ``UPDATE ... FOR UPDATE SKIP LOCKED`` that marks them as taken, and returns their ids as
instructions; duetime runs each instruction as a task of type ``send_user_email`` whose id
is the instruction. What it shows:

- however many workers run, one at a time calls the scheduler (a lease in duetime's store),
  and at most ``concurrency=2`` emails are being sent at once across all of them;
- the scheduler is told the active instructions (the user ids pending or being sent, as
  duetime's store knows them, across every worker), so it never picks a user twice, and it
  is called again as soon as an email has gone out; Planton reads them from the executions
  table instead (``getActiveTaskInstructions``), which ``app.poller(..., active=fn)`` allows;
- while it finds nobody, it backs off: 100 ms, then 1 s, 2 s, ... up to a minute (Planton's
  README writes ``max``; a ``min`` was meant);
- the handler records each run in Planton's ``maintenance_task_execution`` table: a
  ``RUNNING`` row as it starts, ``COMPLETED`` with ``ended_at`` as it ends, and the error
  (as jsonb) if sending failed.

Run it against a local PostgreSQL (``scripts/ensure-postgres`` starts one)::

    pip install -e '.[postgres]'
    python examples/planton_emails.py [--postgres URL] [--store URL] [--workers N] [--users N]

It creates the database named in ``--postgres`` if it is missing (default
``postgresql://postgres@127.0.0.1:5432/duetime_planton``), creates Planton's tables in it
(once), adds ``--users`` users, starts ``--workers`` worker processes (this script with
``--worker``) and prints the progress until every new user got an email; then it stops the
workers with SIGTERM. duetime's own store is by default a SQLite file in a temporary
directory, removed at the end; ``--store redis://127.0.0.1:6379/0`` shares a Redis instead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import AsyncConnectionPool

import duetime

TASK = "send_user_email"
CONCURRENCY = 2
#: How long "sending" one email takes here: long enough to see two at a time.
SEND_SECONDS = 0.05

# Planton's tables, created only where missing. Executions are UNLOGGED, as in Planton: a
# crash may lose them, which is fine for a record of what ran.
SCHEMA = """
CREATE TABLE IF NOT EXISTS maintenance_task (
    id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    nid text NOT NULL,
    maximum_execution_duration interval NOT NULL DEFAULT '5 minutes',
    maximum_concurrent_execution_count integer NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX IF NOT EXISTS maintenance_task_nid_idx ON maintenance_task (nid);

CREATE UNLOGGED TABLE IF NOT EXISTS maintenance_task_execution (
    id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    maintenance_task_id integer NOT NULL
        REFERENCES maintenance_task (id) ON DELETE CASCADE,
    instruction text,
    started_at timestamptz NOT NULL,
    ended_at timestamptz,
    hostname text,
    state text NOT NULL CHECK (state IN ('RUNNING', 'COMPLETED')),
    error jsonb,
    terminated_at timestamptz,
    terminated_reason text,
    last_seen_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK (ended_at IS NULL OR state = 'COMPLETED'),
    CHECK (terminated_at IS NULL OR ended_at IS NOT NULL)
);
CREATE INDEX IF NOT EXISTS maintenance_task_execution_maintenance_task_id_idx
    ON maintenance_task_execution (maintenance_task_id);
CREATE INDEX IF NOT EXISTS maintenance_task_execution_ended_at_maintenance_task_id_idx
    ON maintenance_task_execution (ended_at, maintenance_task_id);
CREATE INDEX IF NOT EXISTS maintenance_task_execution_running_idx
    ON maintenance_task_execution (maintenance_task_id) WHERE ended_at IS NULL;

CREATE TABLE IF NOT EXISTS user_account (
    id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email_address text NOT NULL,
    email_sent_at timestamptz
);
"""

# The scheduler of Planton's README: take up to `limit` users still waiting, skipping
# those active and those another transaction has locked, and mark them as taken.
FIND_USERS = """
UPDATE user_account SET email_sent_at = now()
WHERE id IN (
    SELECT id FROM user_account
    WHERE email_sent_at IS NULL AND NOT (id = ANY(%(active)s::int[]))
    ORDER BY id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
RETURNING id
"""

START_EXECUTION = """
INSERT INTO maintenance_task_execution
    (maintenance_task_id, instruction, started_at, hostname, state)
SELECT id, %(instruction)s, clock_timestamp(), %(hostname)s, 'RUNNING'
FROM maintenance_task WHERE nid = %(task)s
RETURNING id
"""

END_EXECUTION = """
UPDATE maintenance_task_execution
SET state = 'COMPLETED', ended_at = clock_timestamp(), error = %(error)s,
    terminated_at = CASE WHEN %(reason)s::text IS NULL THEN NULL ELSE clock_timestamp() END,
    terminated_reason = %(reason)s
WHERE id = %(id)s
"""


# -- the poller and its handler --------------------------------------------------------


def make_app(store_url: str, namespace: str, pool: AsyncConnectionPool[Any]) -> duetime.App:
    """The duetime app of a worker: the poller ``send_user_email`` and its handler, using
    the PostgreSQL connections of ``pool``."""
    app = duetime.App(store_url, namespace=namespace)

    def delay(attempt: int) -> float:  # duetime's default too, spelled out as in Planton
        return 0.1 if attempt == 0 else min(attempt, 60)

    @app.poller(TASK, concurrency=CONCURRENCY, delay=delay)
    async def find_users(ctx: duetime.PollContext) -> list[str]:
        active = [int(instruction) for instruction in ctx.active_instructions]
        async with pool.connection() as conn:
            cursor = await conn.execute(FIND_USERS, {"active": active, "limit": ctx.limit})
            return [str(user_id) for (user_id,) in await cursor.fetchall()]

    @find_users.handler(retries=3, timeout=30)
    async def send_user_email(instruction: str, ctx: duetime.Context) -> None:
        async with pool.connection() as conn:
            execution_id = await start_execution(conn, instruction)
            error: dict[str, str] | None = None
            reason: str | None = None
            try:
                await send_email(conn, int(instruction), ctx.attempt)
            except asyncio.CancelledError:  # the timeout, or a worker stopping at once
                reason = "cancelled"
                raise
            except Exception as exc:  # recorded, then retried by duetime
                error = {"name": type(exc).__name__, "message": str(exc)}
                raise
            finally:
                await end_execution(conn, execution_id, error, reason)

    return app


async def send_email(conn: psycopg.AsyncConnection[Any], user_id: int, attempt: int) -> None:
    cursor = await conn.execute("SELECT email_address FROM user_account WHERE id = %s", [user_id])
    row = await cursor.fetchone()
    if row is None:
        raise LookupError(f"no user {user_id}")
    await asyncio.sleep(SEND_SECONDS)  # a real app talks to its mail server here
    print(f"  worker {os.getpid()}: email to {row[0]} (attempt {attempt})", flush=True)


async def start_execution(conn: psycopg.AsyncConnection[Any], instruction: str) -> int:
    params = {"instruction": instruction, "hostname": socket.gethostname(), "task": TASK}
    cursor = await conn.execute(START_EXECUTION, params)
    row = await cursor.fetchone()
    if row is None:
        raise LookupError(f"no maintenance_task named {TASK!r}: create the schema first")
    return int(row[0])


async def end_execution(
    conn: psycopg.AsyncConnection[Any],
    execution_id: int,
    error: dict[str, str] | None = None,
    reason: str | None = None,
) -> None:
    error_json = None if error is None else json.dumps(error)
    params = {"id": execution_id, "error": error_json, "reason": reason}
    await conn.execute(END_EXECUTION, params)


# -- the database ----------------------------------------------------------------------


async def create_database(url: str) -> None:
    """Create the database ``url`` names unless it exists (CREATE DATABASE cannot run in a
    transaction: the connection is in autocommit mode)."""
    params = conninfo_to_dict(url)
    name = str(params.get("dbname") or "postgres")
    server = make_conninfo(url, dbname="postgres")
    async with await psycopg.AsyncConnection.connect(server, autocommit=True) as conn:
        cursor = await conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        if await cursor.fetchone() is None:
            await conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


async def create_schema(conn: psycopg.AsyncConnection[Any]) -> None:
    """Create Planton's tables and the task's row where missing."""
    await conn.execute(SCHEMA)
    await conn.execute(
        "INSERT INTO maintenance_task (nid, maximum_concurrent_execution_count)"
        " VALUES (%s, %s) ON CONFLICT (nid) DO NOTHING",
        [TASK, CONCURRENCY],
    )


async def add_users(conn: psycopg.AsyncConnection[Any], count: int) -> list[int]:
    """Add ``count`` users who have not had their email yet; returns their ids."""
    cursor = await conn.execute(
        "INSERT INTO user_account (email_address)"
        " SELECT 'user' || (SELECT coalesce(max(id), 0) FROM user_account) + n || '@example.com'"
        " FROM generate_series(1, %s) AS n"
        " RETURNING id",
        [count],
    )
    return sorted(user_id for (user_id,) in await cursor.fetchall())


async def emails_sent(conn: psycopg.AsyncConnection[Any], user_ids: list[int]) -> int:
    """How many of ``user_ids`` have a completed execution without an error."""
    cursor = await conn.execute(
        "SELECT count(DISTINCT instruction) FROM maintenance_task_execution"
        " WHERE state = 'COMPLETED' AND error IS NULL AND instruction = ANY(%s::text[])",
        [[str(user_id) for user_id in user_ids]],
    )
    row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def most_at_once(conn: psycopg.AsyncConnection[Any], user_ids: list[int]) -> int:
    """The most executions of ``user_ids`` that ran at the same time (an end and a start at
    the same instant do not overlap)."""
    cursor = await conn.execute(
        """
        WITH runs AS (
            SELECT started_at, ended_at FROM maintenance_task_execution
            WHERE instruction = ANY(%s::text[])
        ), steps AS (
            SELECT started_at AS at, 1 AS step FROM runs
            UNION ALL
            SELECT ended_at, -1 FROM runs WHERE ended_at IS NOT NULL
        )
        SELECT coalesce(max(running), 0) FROM (
            SELECT sum(step) OVER (ORDER BY at, step) AS running FROM steps
        ) AS totals
        """,
        [[str(user_id) for user_id in user_ids]],
    )
    row = await cursor.fetchone()
    return int(row[0]) if row else 0


# -- the processes ---------------------------------------------------------------------


async def serve(postgres: str, store: str, namespace: str) -> None:
    """One worker process: run until SIGTERM or SIGINT, then finish the emails being sent.

    (``app.run()`` does the same for an app with nothing else to open and close; here the
    connection pool lives exactly as long as the worker.)
    """
    # Two emails and one scheduler call at a time, at most; each statement commits at once.
    pool = AsyncConnectionPool(
        postgres, min_size=1, max_size=4, kwargs={"autocommit": True}, open=False
    )
    async with pool:
        app = make_app(store, namespace, pool)
        worker = app.worker()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, worker.stop)
        try:
            await worker.run()
        finally:
            await app.close()


def start_worker(postgres: str, store: str, namespace: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, __file__, "--worker", "--postgres", postgres]
    return subprocess.Popen([*command, "--store", store, "--namespace", namespace])


async def main(args: argparse.Namespace) -> int:
    await create_database(args.postgres)
    async with await psycopg.AsyncConnection.connect(args.postgres, autocommit=True) as conn:
        await create_schema(conn)
        users = await add_users(conn, args.users)
        print(f"{len(users)} users are waiting for an email; {args.workers} workers start")
        with tempfile.TemporaryDirectory(prefix="duetime-planton-") as tmp:
            store = args.store or f"sqlite:///{Path(tmp) / 'duetime.db'}"
            workers = [
                start_worker(args.postgres, store, args.namespace) for _ in range(args.workers)
            ]
            try:
                sent = await watch(conn, users, workers)
            finally:
                for worker in workers:
                    if worker.poll() is None:
                        worker.send_signal(signal.SIGTERM)
                for worker in workers:
                    worker.wait()
        if sent < len(users):
            print(f"a worker stopped: {sent} of {len(users)} emails sent", file=sys.stderr)
            return 1
        at_once = await most_at_once(conn, users)
        print(f"all {len(users)} emails sent, at most {at_once} at once")
        return 0


async def watch(
    conn: psycopg.AsyncConnection[Any], users: list[int], workers: list[subprocess.Popen[bytes]]
) -> int:
    """Print the progress until every user in ``users`` got an email, or a worker stopped;
    returns the emails sent."""
    sent = shown = 0
    while sent < len(users) and all(worker.poll() is None for worker in workers):
        await asyncio.sleep(0.2)
        sent = await emails_sent(conn, users)
        if sent != shown:
            print(f"{sent}/{len(users)} emails sent", flush=True)
            shown = sent
    return sent


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--postgres",
        default="postgresql://postgres@127.0.0.1:5432/duetime_planton",
        help="the PostgreSQL database of the users (created if missing)",
    )
    parser.add_argument(
        "--store", help="duetime's store (default: a SQLite file in a temporary directory)"
    )
    parser.add_argument("--namespace", default="planton", help="duetime's namespace")
    parser.add_argument("--workers", type=int, default=3, help="worker processes to start")
    parser.add_argument("--users", type=int, default=20, help="users to add and email")
    parser.add_argument(
        "--worker", action="store_true", help="be one worker (needs --store), until SIGTERM"
    )
    args = parser.parse_args(argv)
    if args.worker and not args.store:
        parser.error("--worker needs --store: the store the workers share")
    if args.workers < 1 or args.users < 0:
        parser.error("--workers must be 1 or more, and --users 0 or more")
    return args


if __name__ == "__main__":
    arguments = parse()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if arguments.worker:
        asyncio.run(serve(arguments.postgres, arguments.store, arguments.namespace))
    else:
        sys.exit(asyncio.run(main(arguments)))
