"""Schema versions of the PostgreSQL store: numbered migrations, applied in one transaction
under an advisory lock, so that workers starting together do not race."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from psycopg import sql

from duetime.errors import SchemaError
from duetime.stores.migrations import Migration, load_folder
from duetime.stores.packaged import folder as package_folder
from duetime.stores.postgres.queries import Q

log = logging.getLogger(__name__)

MIGRATIONS = load_folder(package_folder("duetime.stores.postgres", "migrations"))
#: The schema version this code writes and knows how to read.
LATEST = MIGRATIONS[-1].version
#: First key of the advisory lock taken while migrating (the second is the schema's hash):
#: "dt" in ASCII, so that the lock is told apart in pg_locks.
LOCK_CLASS = 0x6474


async def migrate(
    conn: psycopg.AsyncConnection[Any],
    schema: str,
    migrations: tuple[Migration, ...] = MIGRATIONS,
) -> int:
    """Create ``schema`` if needed and apply the migrations it lacks, in one transaction;
    returns the version it had before.

    The transaction first takes an advisory lock on the schema's name, so that a second
    process starting at the same time waits, then finds the schema current. Tables of
    other applications are left alone: duetime's live in their own schema.

    Raises:
        SchemaError: the schema was written by a newer duetime, or a migration failed (a
            table of that name exists already, say); nothing was changed.
    """
    latest = migrations[-1].version
    async with conn.transaction():
        await conn.execute(b"SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_CLASS, schema))
        current = await _version(conn, schema)
        if current > latest:
            raise SchemaError(
                f"PostgreSQL schema {schema!r} has duetime schema version {current}, but this "
                f"duetime knows versions up to {latest}: it was written by a newer duetime. "
                "Upgrade duetime to use it"
            )
        if current == latest:
            return current
        cur = await conn.execute(b"SELECT to_regnamespace(%s) IS NULL", (schema,))
        missing = await cur.fetchone()
        if missing is not None and missing[0]:  # created only when missing: a user who may
            # not create schemas can still use one an administrator made for duetime
            await conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        for migration in migrations:
            if migration.version <= current:
                continue
            try:
                async with conn.transaction():  # a savepoint: the error names the migration
                    await conn.execute(migration.sql.encode())
                    await conn.execute(
                        Q.record_migration, {"version": migration.version, "name": migration.name}
                    )
            except psycopg.errors.ProgrammingError as exc:
                raise SchemaError(
                    f"cannot bring PostgreSQL schema {schema!r} to duetime schema version "
                    f"{migration.version}: migration {migration.version:04d}_{migration.name} "
                    f"failed ({exc}); nothing was changed"
                ) from exc
    log.info("PostgreSQL schema %s: duetime schema version %d -> %d", schema, current, latest)
    return current


async def _version(conn: psycopg.AsyncConnection[Any], schema: str) -> int:
    cur = await conn.execute(b"SELECT to_regclass(%s) IS NOT NULL", (f"{schema}.schema_version",))
    row = await cur.fetchone()
    if row is None or not row[0]:
        return 0
    cur = await conn.execute(Q.schema_version)
    row = await cur.fetchone()
    return int(row[0]) if row is not None and row[0] is not None else 0
