"""Key expiry events on Redis: making sure the server publishes them."""

from __future__ import annotations

import logging

from duetime.errors import StoreError, StoreUnavailable
from duetime.stores import wire
from duetime.stores.redis.config import errors
from duetime.stores.redis.resp.client import RespClient

log = logging.getLogger(__name__)

#: The server setting that makes Redis publish key events.
KEYSPACE_SETTING = "notify-keyspace-events"


async def enable(link: RespClient) -> list[str]:
    """Add the flags E (key events) and x (expired) to ``notify-keyspace-events``, keeping
    those set; what stops it, as messages (a managed Redis may refuse CONFIG)."""
    try:
        async with errors("enable key events"):
            found = await link.call("CONFIG", "GET", KEYSPACE_SETTING)  # [name, value]
            flags = "".join(wire.text(value) for value in found[1::2])
            if "E" in flags and ("x" in flags or "A" in flags):
                return []
            wanted = flags + "".join(flag for flag in "Ex" if flag not in flags)
            await link.call("CONFIG", "SET", KEYSPACE_SETTING, wanted)
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
