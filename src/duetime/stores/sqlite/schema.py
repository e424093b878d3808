"""Schema versions of the SQLite store: numbered migrations, applied in one transaction."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING

from duetime.errors import SchemaError
from duetime.stores.migrations import Migration, load_folder
from duetime.stores.packaged import folder as package_folder
from duetime.stores.sqlite.queries import Q

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable


def load_migrations(folder: Traversable | None = None) -> tuple[Migration, ...]:
    """The migrations in ``folder`` (by default the package's), in order; see
    :func:`duetime.stores.migrations.load_folder`."""
    if folder is None:
        folder = package_folder("duetime.stores.sqlite", "migrations")
    return load_folder(folder)


MIGRATIONS = load_migrations()
#: The schema version this code writes and knows how to read.
LATEST = MIGRATIONS[-1].version


def statements(script: str) -> list[str]:
    """The statements of ``script``, split where a semicolon ends a complete statement (so
    a semicolon inside a string or a comment does not split)."""
    out: list[str] = []
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if _has_code(pending):
                out.append(pending.strip())
            pending = ""
    if _has_code(pending[:-1]):
        raise SchemaError(f"migration ends with an incomplete statement: {pending[:60]!r}...")
    return out


def _has_code(text: str) -> bool:
    lines = (line.split("--", 1)[0].strip() for line in text.splitlines())
    return any(line and line != ";" for line in lines)


def schema_version(conn: sqlite3.Connection) -> int:
    """The file's schema version: 0 for a file duetime has not initialised."""
    (exists,) = conn.execute(Q.schema_exists).fetchone()
    if not exists:
        return 0
    (version,) = conn.execute(Q.schema_version).fetchone()
    return int(version or 0)


def migrate(
    conn: sqlite3.Connection, path: Path, migrations: tuple[Migration, ...] = MIGRATIONS
) -> int:
    """Apply the migrations the file lacks; returns the version it had before.

    Runs inside the caller's transaction, so the migrations are applied all together or
    not at all. Tables of other applications in the same file are left alone.

    Raises:
        SchemaError: the file was written by a newer duetime (a version higher than the
            last of ``migrations``), or a migration failed (a table of that name exists
            already, say); the caller rolls back.
    """
    latest = migrations[-1].version
    current = schema_version(conn)
    if current > latest:
        raise SchemaError(
            f"{path} has duetime schema version {current}, but this duetime knows versions "
            f"up to {latest}: it was written by a newer duetime. Upgrade duetime to open it"
        )
    for migration in migrations:
        if migration.version <= current:
            continue
        for statement in statements(migration.sql):
            try:
                conn.execute(statement)
            except sqlite3.OperationalError as exc:
                if getattr(exc, "sqlite_errorname", "") != "SQLITE_ERROR":
                    raise  # busy, I/O: not the migration's fault
                raise SchemaError(
                    f"cannot bring {path} to duetime schema version {migration.version}: "
                    f"migration {migration.version:04d}_{migration.name} failed ({exc}); "
                    "nothing was changed"
                ) from exc
        conn.execute(
            Q.record_migration, (migration.version, migration.name, time.time_ns() // 1_000_000)
        )
    return current
