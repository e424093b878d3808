"""Key expiry events on Redis: making sure the server publishes them."""

from __future__ import annotations

import logging
from typing import Any

from redis.asyncio import Redis

from duetime.errors import StoreError, StoreUnavailable
from duetime.stores import wire
from duetime.stores.redis.connection import errors

log = logging.getLogger(__name__)

#: The server setting that makes Redis publish key events.
KEYSPACE_SETTING = "notify-keyspace-events"


async def enable(client: Redis) -> list[str]:
    """Add the flags E (key events) and x (expired) to ``notify-keyspace-events``, keeping
    those set; what stops it, as messages (a managed Redis may refuse CONFIG)."""
    try:
        async with errors("enable key events"):
            found: dict[Any, Any] = await client.config_get(KEYSPACE_SETTING)
            flags = "".join(wire.text(value) for value in found.values())
            if "E" in flags and ("x" in flags or "A" in flags):
                return []
            wanted = flags + "".join(flag for flag in "Ex" if flag not in flags)
            await client.config_set(KEYSPACE_SETTING, wanted)
    except StoreUnavailable:
        raise
    except StoreError as exc:
        return [
            f"Redis refused to read or set {KEYSPACE_SETTING} ({exc}): set it to include the "
            "flags E and x (for example 'Ex') in the server's configuration; key expiry "
            "handlers fire only then"
        ]
    log.info("%s set to %r for key expiry handlers", KEYSPACE_SETTING, wanted)
    return []
