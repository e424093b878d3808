"""What the SQLite store's tests share: URLs, stores on a path, the schema's versions."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from duetime.stores.sqlite.config import parse_sqlite_url
from duetime.stores.sqlite.store import SqliteStore
from tests.helpers import record_text

ROOT = Path(__file__).resolve().parents[3]
T0 = 1_900_000_000_000  # in 2030: a manual clock, never this machine's
PAST = 1_000_000_000_000  # in 2001: due by this machine's clock
REC = record_text("{}")


def url_of(path: Path, query: str = "") -> str:
    return f"sqlite:///{path}" + (f"?{query}" if query else "")


def make_store(path: Path, namespace: str = "ns", query: str = "") -> SqliteStore:
    return SqliteStore(parse_sqlite_url(url_of(path, query), namespace=namespace))


def versions(path: Path) -> list[int]:
    conn = sqlite3.connect(path)
    try:
        return [row[0] for row in conn.execute("SELECT version FROM duetime_schema ORDER BY 1")]
    finally:
        conn.close()
