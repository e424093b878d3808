"""The PostgreSQL store's connections: the pool, error mapping, and the server checks."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

import psycopg
import psycopg_pool
from psycopg import conninfo as libpq

from duetime.errors import ConfigError, SchemaError, StoreError, StoreRefused, StoreUnavailable
from duetime.stores.postgres.config import PostgresConfig
from duetime.stores.postgres.queries import Q

log = logging.getLogger(__name__)

T = TypeVar("T")
Conn = psycopg.AsyncConnection[Any]

#: Oldest server with what the store relies on (autovacuum_vacuum_insert_scale_factor, in
#: the first migration; SKIP LOCKED and identity columns are older).
MIN_SERVER = 130000
#: How long a call waits for a free connection of the pool (or for the server to accept a
#: new one) before it fails with StoreUnavailable.
POOL_TIMEOUT_SECONDS = 10.0
#: SQLSTATE classes that mean the connection or the server went away: 08 connection
#: exception, 57P admin shutdown / crash shutdown / cannot connect now.
_GONE = ("08", "57P")


#: The planner settings of every connection (see :func:`connect_kwargs`).
PLAN_OPTIONS = "-c enable_sort=off -c enable_bitmapscan=off -c jit=off"


def connect_kwargs(config: PostgresConfig) -> dict[str, Any]:
    """Settings of every connection: duetime's schema first on the search path and
    :data:`PLAN_OPTIONS` (after the options the URL gives libpq, so these hold), and a
    name in pg_stat_activity.

    Every statement of duetime walks one index in its order and stops early (ORDER BY ...
    LIMIT, or a key lookup), which beats a sort of every matching row by far; with sorts
    and bitmap scans priced out, the planner takes that path whatever the table's
    statistics say. Without them, a table filled since its last ANALYZE (a burst of tasks
    scheduled moments ago: autovacuum analyzes it up to a minute later), or never analysed,
    looked small to the planner, which then sorted every due task of the type for each
    claim or look. A sort a statement must still make (the first tasks of each priority,
    a few rows) is made all the same. JIT is off: with sorts priced out, the cost given to
    such a statement is far over ``jit_above_cost``, and compiling it took over a second,
    for a statement that runs in about a millisecond.
    """
    given = libpq.conninfo_to_dict(config.conninfo)
    options = f"{given.get('options') or ''} -c search_path={config.schema} {PLAN_OPTIONS}"
    options = options.strip()
    return {
        "options": options,
        "application_name": given.get("application_name") or "duetime",
    }


def map_error(exc: BaseException, what: str, config: PostgresConfig) -> StoreError:
    """The duetime error for a driver exception raised during ``what``."""
    where = config.shown
    if isinstance(exc, psycopg_pool.PoolTimeout):
        return StoreUnavailable(f"PostgreSQL {where} unavailable during {what}: {exc}")
    if isinstance(exc, UnicodeEncodeError):
        return StoreRefused(f"bad arguments for {what}: text that UTF-8 cannot carry ({exc})")
    if isinstance(exc, psycopg.errors.UndefinedTable | psycopg.errors.InvalidSchemaName):
        return SchemaError(
            f"PostgreSQL {where} lacks duetime's tables in schema {config.schema!r} ({what}): {exc}"
        )
    if isinstance(exc, psycopg.DataError):
        return StoreRefused(f"PostgreSQL refused the arguments of {what}: {_one_line(exc)}")
    if isinstance(exc, psycopg.OperationalError) or _gone(exc):
        return StoreUnavailable(f"PostgreSQL {where} unavailable during {what}: {_one_line(exc)}")
    return StoreError(f"PostgreSQL error on {where} during {what}: {_one_line(exc)}")


def _gone(exc: BaseException) -> bool:
    state = getattr(exc, "sqlstate", None) or ""
    return state.startswith(_GONE)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


class Runs(Protocol):
    """What runs a store's SQL: :class:`Database` on the pool, ``caller.CallerDatabase`` on
    an application's connection."""

    async def run(self, what: str, job: Callable[[Conn], Awaitable[T]]) -> T: ...

    async def close(self) -> None: ...


class Database:
    """The pool of one store, and the one way its SQL runs: :meth:`run`."""

    def __init__(self, config: PostgresConfig) -> None:
        self.config = config
        self.pool = psycopg_pool.AsyncConnectionPool(
            config.conninfo,
            kwargs={"autocommit": True, **connect_kwargs(config)},
            min_size=1,
            max_size=config.pool_size,
            timeout=POOL_TIMEOUT_SECONDS,
            open=False,
            name="duetime",
        )

    async def open(self) -> list[str]:
        """Check the server and migrate the schema on a connection of its own (so that a
        refused connection says why at once), then open the pool; returns what the
        server's settings may lose (see :func:`read_settings`).

        Raises:
            StoreUnavailable: the server cannot be reached or refuses the connection.
            ConfigError: the server is too old.
            SchemaError: see :func:`schema.migrate`.
        """
        from duetime.stores.postgres import schema

        config = self.config
        try:
            async with await psycopg.AsyncConnection.connect(
                config.conninfo, autocommit=True, **connect_kwargs(config)
            ) as conn:
                version = conn.info.server_version
                if version < MIN_SERVER:
                    raise ConfigError(
                        f"PostgreSQL {version // 10000} is too old: duetime needs "
                        f"{MIN_SERVER // 10000} or newer"
                    )
                await schema.migrate(conn, config.schema)
                found = await read_settings(conn)
        except psycopg.OperationalError as exc:
            raise StoreUnavailable(
                f"PostgreSQL {config.shown} does not answer or refuses the connection: "
                f"{_one_line(exc)}"
            ) from exc
        except psycopg.Error as exc:
            raise map_error(exc, "open", config) from exc
        try:
            await self.pool.open(wait=True, timeout=POOL_TIMEOUT_SECONDS)
        except psycopg_pool.PoolTimeout as exc:
            await self.pool.close()
            raise StoreUnavailable(
                f"PostgreSQL {config.shown} does not answer (no pool connection within "
                f"{POOL_TIMEOUT_SECONDS:g} s)"
            ) from exc
        log.info("PostgreSQL store open: %s (schema %s)", config.shown, config.schema)
        return found

    async def close(self) -> None:
        await self.pool.close()

    async def run(self, what: str, job: Callable[[Conn], Awaitable[T]]) -> T:
        """``job`` on a connection of the pool, its driver errors mapped to duetime's.

        A job that fails because its connection was dropped (the server restarted, or an
        administrator ended the backend) runs once more on another connection: a pooled
        connection is found dead only when used. Every job may run twice (see
        ``Store``): one that fails this way never ran, was rolled back, or committed and
        lost its reply.
        """
        for attempt in (1, 2):
            conn: Conn | None = None
            try:
                async with self.pool.connection() as conn:
                    return await job(conn)
            except (psycopg.Error, psycopg_pool.PoolTimeout, UnicodeEncodeError) as exc:
                dropped = conn is not None and conn.closed and isinstance(exc, psycopg.Error)
                if attempt == 1 and dropped:
                    log.info("PostgreSQL connection dropped during %s (%s); again", what, exc)
                    continue
                raise map_error(exc, what, self.config) from exc
        raise AssertionError("unreachable")


async def read_settings(conn: Conn) -> list[str]:
    """What the server's settings may lose on a crash, as messages (``[]`` when none)."""
    cur = await conn.execute(Q.settings)
    row = await cur.fetchone()
    assert row is not None
    fsync, synchronous_commit, full_page_writes = (str(v).lower() for v in row)
    found = []
    if fsync == "off":
        found.append(
            "PostgreSQL runs with fsync=off: a crash of the server or its machine can lose or "
            "corrupt committed tasks. Set fsync=on"
        )
    if full_page_writes == "off":
        found.append(
            "PostgreSQL runs with full_page_writes=off: a power cut can corrupt the tables. "
            "Set full_page_writes=on"
        )
    if synchronous_commit == "off":
        found.append(
            "PostgreSQL runs with synchronous_commit=off: a crash of the server can lose the "
            "latest acknowledged writes (up to three times wal_writer_delay). Set "
            "synchronous_commit=on (or local) for duetime's role or database"
        )
    return found
