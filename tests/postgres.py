"""The PostgreSQL the tests use: the server on 127.0.0.1:5432 (user postgres, trust auth),
each test in a schema of its own with a random name, dropped at the end.

``make install`` runs scripts/ensure-postgres, which starts the server if it can.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from psycopg import sql

SERVER = "postgresql://postgres@127.0.0.1:5432"
#: The database the contract tests make their schemas in (created if missing).
DATABASE = "test"


def admin(database: str = "postgres") -> psycopg.Connection[Any]:
    """An autocommit connection to ``database``; fails the test, saying what to do, when the
    server does not answer."""
    try:
        return psycopg.connect(f"{SERVER}/{database}", autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        problem = " ".join(str(exc).split())
    pytest.fail(
        f"PostgreSQL does not answer at {SERVER}/{database} ({problem}); the PostgreSQL tests "
        "need it (user postgres, trust authentication for 127.0.0.1): run "
        "scripts/ensure-postgres (make install does), or start it yourself",
        pytrace=False,
    )


def ensure_database(name: str = DATABASE) -> None:
    with admin() as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if found is None:
            try:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            except psycopg.errors.DuplicateDatabase:
                pass  # created by another test process meanwhile


@contextmanager
def fresh_schema(database: str = DATABASE) -> Iterator[str]:
    """The URL of a schema with a random name (not created: the store creates it); the
    schema is dropped at the end, with every connection still using it ended first."""
    ensure_database(database)
    schema = "t_" + uuid.uuid4().hex[:12]
    try:
        yield f"{SERVER}/{database}?schema={schema}"
    finally:
        with admin(database) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
