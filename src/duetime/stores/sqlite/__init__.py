"""The SQLite store: duetime's embedded default, one file shared by any number of processes."""

from __future__ import annotations

from duetime.stores.sqlite.config import SqliteConfig, parse_sqlite_url
from duetime.stores.sqlite.store import SqliteStore

__all__ = ["SqliteConfig", "SqliteStore", "parse_sqlite_url"]
