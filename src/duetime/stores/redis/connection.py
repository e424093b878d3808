"""The Redis store's connection: its settings, the client, and the one map of redis-py's
exceptions to duetime's."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import redis
from redis import exceptions as rexc
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff
from redis.driver_info import DriverInfo

from duetime.errors import ConfigError, StoreError, StoreUnavailable
from duetime.stores.base import Durability
from duetime.stores.redis import scripts
from duetime.stores.redis.sentinel import SCHEMES as SENTINEL_SCHEMES
from duetime.stores.redis.sentinel import connect_sentinel
from duetime.version import VERSION


@dataclass(frozen=True, slots=True, kw_only=True)
class RedisConfig:
    """How to reach Redis and which tasks are ours.

    Attributes:
        url: a ``redis://``, ``rediss://`` or ``unix://`` URL (redis-py's forms), or a
            ``redis+sentinel://`` one (:mod:`.sentinel`).
        namespace: keeps several apps apart on one server.
        allow_eviction: start even though the server evicts keys under memory pressure
            (``allkeys-*`` policies), which loses tasks without an error. Off by default.
        durability: ``"local"``: a write returns once the server has it; ``"replicated"``:
            once a replica has it too (``WAIT``), else StoreUnavailable.
    """

    url: str
    namespace: str = "default"
    allow_eviction: bool = False
    durability: Durability = "local"


#: What redis-py raises: mapped to duetime's errors by :func:`store_error`, the one map.
DRIVER_ERRORS = (rexc.RedisError, OSError)


def store_error(exc: BaseException, what: str) -> StoreError:
    """The duetime error for a redis-py (or socket) exception raised during ``what``."""
    if isinstance(exc, rexc.ConnectionError | rexc.TimeoutError | OSError):
        return StoreUnavailable(f"Redis unavailable during {what}: {exc}")
    # ClusterError: also redis-py's "TTL exhausted." after as many redirections as it
    # follows (MOVED, ASK, TRYAGAIN), as a resharding can cause: nothing was run.
    moving = (rexc.MovedError, rexc.AskError, rexc.TryAgainError, rexc.ClusterError)
    if isinstance(exc, moving) or str(exc).startswith("NOREPLICAS"):
        # Refused for now (a primary without enough replicas, a cluster in a failover):
        # nothing was written, and the same call later is safe.
        return StoreUnavailable(f"Redis refused {what} for now: {exc}")
    return StoreError(f"Redis error during {what}: {exc}")


@contextlib.asynccontextmanager
async def errors(what: str) -> AsyncIterator[None]:
    """Map redis-py's exceptions, and bound how long a read may take (the client has no
    socket timeout of its own: see scripts.CALL_TIMEOUT_SECONDS)."""
    try:
        async with asyncio.timeout(scripts.CALL_TIMEOUT_SECONDS):
            yield
    except DRIVER_ERRORS as exc:
        raise store_error(exc, what) from exc
    except AttributeError as exc:
        if not raised_in_driver(exc):
            raise
        raise StoreUnavailable(f"Redis Cluster unavailable during {what}: {exc!r}") from exc


def raised_in_driver(exc: BaseException) -> bool:
    """Whether ``exc`` was raised inside redis-py: its cluster client closes itself to read
    the topology again after a CLUSTERDOWN (a failover), under the calls in flight, which
    then fail with an AttributeError. Anywhere else an AttributeError is a bug, and passes."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and f"{os.sep}redis{os.sep}" in tb.tb_frame.f_code.co_filename


def driver_info() -> DriverInfo:
    """How duetime's connections name themselves to the server (``CLIENT SETINFO``, seen
    in ``CLIENT LIST`` as ``lib-name=redis-py(duetime_v<version>)``). Given, it also spares
    every new connection redis-py's own look-up of its version in the installed
    packages' metadata, a few milliseconds each of a worker's start."""
    return DriverInfo(lib_version=redis.__version__).add_upstream_driver("duetime", VERSION)


def connect(
    url: str, *, retries: int = 8, socket_timeout: float | None = None, **options: Any
) -> Redis:
    """A client for ``url`` (no connection is made yet).

    Raises:
        ConfigError: the URL cannot be used.
    """
    # from_url gives connections no retries: reads would fail on the first dropped idle
    # connection. Reads are safe to repeat; scripts have their own runner. Replies stay
    # bytes: the store decodes each field itself (duetime.stores.wire), so that one value
    # that is not UTF-8 cannot fail a whole reply.
    retry = Retry(ExponentialWithJitterBackoff(base=0.02, cap=1.0), retries)
    options.update(decode_responses=False, retry=retry, socket_timeout=socket_timeout)
    options.setdefault("driver_info", driver_info())
    if urlsplit(url).scheme.lower() in SENTINEL_SCHEMES:
        return connect_sentinel(url, **options)
    try:
        return Redis.from_url(url, **options)
    except ValueError as exc:
        raise ConfigError(f"bad Redis URL: {exc}") from None
