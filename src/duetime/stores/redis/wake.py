"""Pub/sub on Redis: the wake-up channel of a namespace ("<type> <due ms>" per message),
and any channel a worker listens to (key expiry events), on a connection of its own
(:mod:`.resp.subscription`) that reconnects by itself."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from duetime._backoff import backoff_delay
from duetime._outage import OutageLog
from duetime.stores import wire
from duetime.stores.base import ABORT_WAKE_MS, WakeCallback
from duetime.stores.redis.resp.client import Source
from duetime.stores.redis.resp.errors import ReplyError
from duetime.stores.redis.resp.subscription import Subscriber, subscribed

log = logging.getLogger(__name__)

#: How long one read waits (on a cluster's shard channels: .cluster), and the back-off
#: after a lost connection: first, and cap.
LISTEN_POLL_SECONDS = 1.0
LISTEN_BACKOFF_FIRST = 0.05
LISTEN_BACKOFF_CAP = 5.0
#: The second word of the message abort.lua publishes.
ABORT_WORD = "abort"


async def listen(source: Source, channel: str, on_wake: WakeCallback) -> None:
    """Call ``on_wake`` for every message on ``channel`` of the server ``source`` names,
    reconnecting until cancelled; ``on_wake("*", 0)`` after each (re)connection:
    anything published while no one listened is lost, so the worker looks again."""
    await subscribe(
        source,
        channel,
        lambda data: dispatch(data, on_wake),
        on_connect=lambda: on_wake("*", 0),
        what="wake-up channel",
    )


async def subscribe(
    source: Source,
    channel: str,
    on_message: Callable[[bytes], None],
    *,
    on_connect: Callable[[], None] = lambda: None,
    what: str,
) -> None:
    """Call ``on_message`` with the data of every message on ``channel`` of the server
    ``source`` names, until cancelled; a lost connection is made again (to where the source
    then says), and ``on_connect`` is called each time the subscription holds."""
    failures = 0
    outage = OutageLog(what, log)
    while True:
        subscriber: Subscriber | None = None
        try:
            subscriber = await subscribed(await source.endpoint(), channel, on_message)
            outage.ok()
            on_connect()
            failures = 0
            await subscriber.watch()  # until the connection is lost
        except (OSError, ReplyError) as exc:
            # OSError: ConnectionLost and the like; ReplyError: the server refused (a
            # LOADING server after a restart, a demoted primary, an ACL).
            source.lost()
            outage.failed(exc, "connection lost (%s); reconnecting", exc, expected=True)
        finally:
            if subscriber is not None:
                subscriber.abort()
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
