"""The Redis store's connection settings, and the one map of its clients' exceptions
(duetime's own, :mod:`.resp`, and redis-py's cluster client, :mod:`.cluster`) to duetime's."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, NamedTuple

from duetime.errors import StoreError, StoreUnavailable
from duetime.stores.base import Durability
from duetime.stores.redis.resp.client import CALL_TIMEOUT_SECONDS
from duetime.stores.redis.resp.errors import ReplyError

if TYPE_CHECKING:
    from duetime.stores.redis.resp.credentials import Credentials


class RedisConfig(NamedTuple):
    """How to reach Redis and which tasks are ours.

    Attributes:
        url: a ``redis://``, ``rediss://`` or ``unix://`` URL (:mod:`.resp.endpoint`), or a
            ``redis+sentinel://`` one (:mod:`.sentinel`).
        namespace: keeps several apps apart on one server.
        allow_eviction: start even though the server evicts keys under memory pressure
            (``allkeys-*`` policies), which loses tasks without an error. Off by default.
        durability: ``"local"``: a write returns once the server has it; ``"replicated"``:
            once a replica has it too (``WAIT``), else StoreUnavailable.
        credentials: a callable returning ``(username, password)``, asked on each new
            connection in place of the URL's (:mod:`.resp.credentials`).
    """

    url: str
    namespace: str = "default"
    allow_eviction: bool = False
    durability: Durability = "local"
    credentials: Credentials | None = None


def driver_errors() -> tuple[type[BaseException], ...]:
    """What the store's clients raise, mapped by :func:`store_error`: duetime's own client's
    (OSError: a lost connection or a call out of time; ReplyError) and, once something
    loaded it, redis-py's (it is never imported for this)."""
    found = sys.modules.get("redis.exceptions")
    if found is None:
        return (OSError, ReplyError)
    return (OSError, ReplyError, found.RedisError)


def store_error(exc: BaseException, what: str) -> StoreError:
    """The duetime error for a client's (or socket's) exception raised during ``what``."""
    if isinstance(exc, OSError) or _redis_py(exc, "ConnectionError", "TimeoutError"):
        return StoreUnavailable(f"Redis unavailable during {what}: {exc}")
    # ClusterError: also redis-py's "TTL exhausted." after as many redirections as it
    # follows (MOVED, ASK, TRYAGAIN), as a resharding can cause: nothing was run.
    moving = _redis_py(exc, "MovedError", "AskError", "TryAgainError", "ClusterError")
    if moving or str(exc).startswith("NOREPLICAS"):
        # Refused for now (a primary without enough replicas, a cluster in a failover):
        # nothing was written, and the same call later is safe.
        return StoreUnavailable(f"Redis refused {what} for now: {exc}")
    return StoreError(f"Redis error during {what}: {exc}")


def _redis_py(exc: BaseException, *names: str) -> bool:
    """Whether ``exc`` is one of redis-py's exceptions of these names (False when redis-py
    is not loaded: it raised nothing then)."""
    found = sys.modules.get("redis.exceptions")
    return found is not None and isinstance(exc, tuple(getattr(found, n) for n in names))


@contextlib.asynccontextmanager
async def errors(what: str) -> AsyncIterator[None]:
    """Map the clients' exceptions, and bound how long a read may take (redis-py's client
    has no socket timeout of its own: see .resp.client.CALL_TIMEOUT_SECONDS)."""
    try:
        async with asyncio.timeout(CALL_TIMEOUT_SECONDS):
            yield
    except driver_errors() as exc:
        raise store_error(exc, what) from exc
    except AttributeError as exc:
        if not raised_in_driver(exc):
            raise
        raise StoreUnavailable(f"Redis Cluster unavailable during {what}: {exc!r}") from exc


def raised_in_driver(exc: BaseException) -> bool:
    """Whether ``exc`` was raised inside redis-py: its cluster client closes itself to read
    the topology again after a CLUSTERDOWN (a failover), under the calls in flight, which
    then fail with an AttributeError. Anywhere else (duetime's own stores.redis included) an
    AttributeError is a bug, and passes."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    module = "" if tb is None else str(tb.tb_frame.f_globals.get("__name__", ""))
    return module == "redis" or module.startswith("redis.")
