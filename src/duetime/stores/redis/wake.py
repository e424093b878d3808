"""Pub/sub on Redis: the wake-up channel of a namespace ("<type> <due ms>" per message),
and any channel a worker listens to (key expiry events), on a connection of its own that
reconnects by itself."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from redis import exceptions as rexc
from redis.asyncio import Redis

from duetime.backoff import backoff_delay
from duetime.outage import OutageLog
from duetime.stores import wire
from duetime.stores.base import ABORT_WAKE_MS, WakeCallback

log = logging.getLogger(__name__)

#: How long one read waits, and the back-off after a lost connection: first, and cap.
LISTEN_POLL_SECONDS = 1.0
LISTEN_BACKOFF_FIRST = 0.05
LISTEN_BACKOFF_CAP = 5.0
#: The second word of the message abort.lua publishes.
ABORT_WORD = "abort"


async def listen(connect: Callable[[], Redis], channel: str, on_wake: WakeCallback) -> None:
    """Call ``on_wake`` for every message on ``channel``, reconnecting with ``connect`` (a
    new client each time) until cancelled; ``on_wake("*", 0)`` after each (re)connection:
    anything published while no one listened is lost, so the worker looks again."""
    await subscribe(
        connect,
        channel,
        lambda data: dispatch(data, on_wake),
        on_connect=lambda: on_wake("*", 0),
        what="wake-up channel",
    )


async def subscribe(
    connect: Callable[[], Redis],
    channel: str,
    on_message: Callable[[object], None],
    *,
    on_connect: Callable[[], None] = lambda: None,
    what: str,
) -> None:
    """Call ``on_message`` with the data of every message on ``channel``, until cancelled;
    a lost connection is made again (with ``connect``, a new client each time), and
    ``on_connect`` is called each time the subscription holds."""
    failures = 0
    outage = OutageLog(what, log)
    while True:
        client = connect()
        pubsub = client.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(channel)
            outage.ok()
            on_connect()
            failures = 0
            while True:
                message = await pubsub.get_message(timeout=LISTEN_POLL_SECONDS)
                if message is not None:
                    on_message(message.get("data"))
        except (rexc.ConnectionError, rexc.TimeoutError, OSError, RuntimeError) as exc:
            # RuntimeError: asyncio's answer to a write on a transport that closed under
            # redis-py (a server that died, a Sentinel failover): lost like any other way.
            outage.failed(exc, "connection lost (%s); reconnecting", exc, expected=True)
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()
            with contextlib.suppress(Exception):
                await client.aclose()
        failures += 1
        await asyncio.sleep(backoff_delay(failures, LISTEN_BACKOFF_FIRST, LISTEN_BACKOFF_CAP))


def dispatch(data: object, on_wake: WakeCallback) -> None:
    """Hand one message, "<type> <due ms>" (or "<type> abort": a run of the type was marked
    to abort, handed on as :data:`~duetime.stores.base.ABORT_WAKE_MS`), to ``on_wake``; one
    that does not decode or parse is ignored (a wake-up is only a hint: the worker looks on
    its own anyway)."""
    try:
        text = data.decode() if isinstance(data, bytes) else data
        if not isinstance(text, str):
            raise ValueError("not text")
        task_type, _, due = text.partition(" ")
        due_ms = ABORT_WAKE_MS if due == ABORT_WORD else wire.ms(due)
        if not task_type or due_ms == wire.UNREADABLE_MS:
            raise ValueError("not '<type> <due ms>'")
    except ValueError:  # UnicodeDecodeError included
        log.debug("ignored a malformed wake-up message %r", data)
        return
    on_wake(task_type, due_ms)
