"""Wake-ups on PostgreSQL: LISTEN on a connection of its own, which reconnects by itself."""

from __future__ import annotations

import asyncio
import logging

import psycopg
from psycopg import sql

from duetime._backoff import backoff_delay
from duetime._outage import OutageLog
from duetime.clock import iso
from duetime.stores.base import ABORT_WAKE_MS, WakeCallback
from duetime.stores.postgres.config import PostgresConfig
from duetime.stores.postgres.connection import connect_kwargs
from duetime.stores.postgres.ops import ABORT_WORD

log = logging.getLogger(__name__)

#: How long the listening connection may stay silent before it is checked with a query: a
#: connection whose server vanished without closing it (a network cut) is found within
#: this, and replaced.
PING_SECONDS = 10.0
#: After a failed connection: the first wait before trying again, and the cap.
RETRY_FIRST_SECONDS = 0.05
RETRY_CAP_SECONDS = 5.0


async def listen(config: PostgresConfig, on_wake: WakeCallback) -> None:
    """Call ``on_wake`` for every wake-up of the store's channel until cancelled.

    Writes that make a task the earliest of its type run ``pg_notify`` in their own
    transaction, so a wake-up is sent only once the task is committed. A notification sent
    while this connection is down is lost: ``on_wake("*", 0)`` is called after every
    (re)connection, and workers also wake at the next due time they know of.
    """
    failures = 0
    outage = OutageLog(f"wake-up connection to {config.shown}", log)
    while True:
        try:
            conn = await psycopg.AsyncConnection.connect(
                config.conninfo, autocommit=True, **connect_kwargs(config)
            )
            async with conn:
                await conn.execute(_listen(config))
                outage.ok()
                failures = 0
                log.debug("listening for wake-ups on %s", config.channel)
                _call(on_wake, "*", 0)  # anything written while no one listened
                await _receive(conn, on_wake, _listen(config))
        except psycopg.Error as exc:
            failures += 1
            delay = backoff_delay(failures, RETRY_FIRST_SECONDS, RETRY_CAP_SECONDS)
            outage.failed(
                exc, "failed or lost (%s); trying again", " ".join(str(exc).split()), expected=True
            )
            await asyncio.sleep(delay)


def _listen(config: PostgresConfig) -> sql.Composed:
    return sql.SQL("LISTEN {}").format(sql.Identifier(config.channel))


async def _receive(
    conn: psycopg.AsyncConnection[object], on_wake: WakeCallback, ping: sql.Composed
) -> None:
    while True:
        async for note in conn.notifies(timeout=PING_SECONDS):
            due, _, task_type = note.payload.partition(" ")
            try:
                due_ms = ABORT_WAKE_MS if due == ABORT_WORD else int(due)
            except ValueError:  # not one of duetime's: a wake-up is only a hint
                log.debug("wake-up with an unreadable payload %r", note.payload)
                continue
            if log.isEnabledFor(logging.DEBUG):
                log.debug("wake-up: %s due at %s", task_type, iso(due_ms))
            _call(on_wake, task_type, due_ms)
        # Raises if the connection is dead. The LISTEN again (a no-op for a channel already
        # listened to) rather than a SELECT 1 keeps the connection's last statement, which
        # pg_stat_activity shows, telling an operator what the connection is for.
        await conn.execute(ping)


def _call(on_wake: WakeCallback, task_type: str, due_ms: int) -> None:
    try:
        on_wake(task_type, due_ms)
    except Exception:
        log.exception("wake-up callback failed for %s", task_type)
