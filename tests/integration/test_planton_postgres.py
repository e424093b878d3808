"""Planton's README example on PostgreSQL (examples/planton_emails.py): three worker
processes share its poller, whose scheduler is the ``FOR UPDATE SKIP LOCKED`` query; every
user gets exactly one email, never more than two at once.

The tests use the local PostgreSQL on 127.0.0.1:5432 (user postgres, trust auth), each in a
database of its own with a random name, dropped at the end; scripts/ensure-postgres starts
the server.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg
import pytest
from psycopg import sql

import duetime
from tests.helpers import eventually
from tests.servers import RedisServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "planton_emails.py"
SERVER = "postgresql://postgres@127.0.0.1:5432"
USERS = 60


def _load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("planton_emails", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


example = _load_example()


@pytest.fixture
def postgres() -> Iterator[psycopg.Connection[Any]]:
    """A connection to the server's postgres database, for creating and dropping others."""
    try:
        conn = psycopg.connect(f"{SERVER}/postgres", autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        problem = " ".join(str(exc).split())
    else:
        with conn:
            yield conn
        return
    pytest.fail(
        f"PostgreSQL does not answer at {SERVER} ({problem}); these tests need it: "
        "run scripts/ensure-postgres (make install does)",
        pytrace=False,
    )


@pytest.fixture
def database_url(postgres: psycopg.Connection[Any]) -> Iterator[str]:
    """The URL of a database with a random name, not created yet; dropped at the end."""
    name = "duetime_test_" + uuid.uuid4().hex[:12]
    try:
        yield f"{SERVER}/{name}"
    finally:
        drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        postgres.execute(drop)


@pytest.fixture
def empty_database(postgres: psycopg.Connection[Any], database_url: str) -> str:
    """The URL of a new, empty database; dropped at the end."""
    name = database_url.rsplit("/", 1)[1]
    postgres.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return database_url


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def _start_worker(postgres: str, store: str, namespace: str, log: Path) -> subprocess.Popen[bytes]:
    args = ["--worker", "--postgres", postgres, "--store", store, "--namespace", namespace]
    with log.open("wb") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [sys.executable, str(EXAMPLE), *args],
            cwd=ROOT,
            env=_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _stop(workers: list[subprocess.Popen[bytes]]) -> list[int]:
    """SIGTERM each worker and return their exit codes; one that hangs is killed (-9)."""
    for proc in workers:
        proc.send_signal(signal.SIGTERM)
    codes = []
    for proc in workers:
        try:
            codes.append(proc.wait(20))
        except subprocess.TimeoutExpired:
            proc.kill()
            codes.append(proc.wait())
    return codes


def _most_at_once(runs: list[tuple[datetime, datetime]]) -> int:
    """The most runs at the same time; one ending as another starts does not overlap."""
    steps = sorted([(start, 1) for start, _ in runs] + [(end, -1) for _, end in runs])
    running = most = 0
    for _, step in steps:  # at the same instant -1 sorts first: ends before starts
        running += step
        most = max(most, running)
    return most


async def _execution_rows(conn: psycopg.AsyncConnection[Any]) -> list[tuple[Any, ...]]:
    cursor = await conn.execute(
        "SELECT e.instruction, e.state, e.started_at, e.ended_at, e.hostname, e.error,"
        " e.terminated_at FROM maintenance_task_execution e"
        " JOIN maintenance_task t ON t.id = e.maintenance_task_id WHERE t.nid = %s",
        [example.TASK],
    )
    return await cursor.fetchall()


@pytest.mark.slow
@pytest.mark.parametrize("store", ["sqlite", "redis"])
async def test_three_worker_processes_email_every_user_once_two_at_a_time(
    store: str,
    empty_database: str,
    redis_server: RedisServer,
    namespace: str,
    tmp_path: Path,
) -> None:
    store_url = redis_server.url if store == "redis" else f"sqlite:///{tmp_path / 'duetime.db'}"
    async with await psycopg.AsyncConnection.connect(empty_database, autocommit=True) as conn:
        await example.create_schema(conn)
        await example.create_schema(conn)  # idempotent: a second time changes nothing
        users: list[int] = await example.add_users(conn, USERS)
        assert len(users) == USERS

        logs = [tmp_path / f"worker{n}.log" for n in range(3)]
        workers = [_start_worker(empty_database, store_url, namespace, log) for log in logs]
        try:

            async def all_sent() -> bool:
                sent: int = await example.emails_sent(conn, users)
                return sent == USERS

            await eventually(all_sent, within=40, what=f"{USERS} emails sent", every=0.1)
        finally:
            codes = _stop(workers)
        output = "\n".join(f"== {log.name}\n{log.read_text()[-2000:]}" for log in logs)
        assert codes == [0, 0, 0], output  # each stopped cleanly on SIGTERM

        cursor = await conn.execute("SELECT count(*) FROM user_account WHERE email_sent_at IS NULL")
        assert await cursor.fetchone() == (0,)
        rows = await _execution_rows(conn)

    # One execution per user, and no other: nobody got two emails, nor a stranger one.
    assert sorted(int(instruction) for instruction, *_ in rows) == users
    for instruction, state, started_at, ended_at, hostname, error, terminated_at in rows:
        assert state == "COMPLETED", instruction
        assert ended_at is not None and ended_at >= started_at, instruction
        assert hostname == socket.gethostname(), instruction
        assert error is None and terminated_at is None, instruction
    # The poller's concurrency across the three processes: two at once, never three.
    assert _most_at_once([(started, ended) for _, _, started, ended, *_ in rows]) == 2
    printed = sum(log.read_text().count(": email to user") for log in logs)
    assert printed == USERS

    # duetime's store holds nothing more to run, nor dead letters.
    app = duetime.App(store_url, namespace=namespace)
    app.declare(example.TASK)
    try:
        assert await app.counts(example.TASK) == {"due": 0, "running": 0, "dead": 0}
    finally:
        await app.close()


@pytest.mark.slow
def test_the_example_creates_its_database_and_emails_every_user(
    database_url: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--postgres", database_url, "--users", "20"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=50,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "20 users are waiting for an email; 3 workers start" in out
    assert "20/20 emails sent" in out
    assert "all 20 emails sent, at most 2 at once" in out
    for n in range(1, 21):  # a fresh database: the users are user1 to user20
        assert out.count(f": email to user{n}@example.com (attempt 1)") == 1, out
    assert list(tmp_path.iterdir()) == []  # its SQLite store was a temporary file
