"""redis-py's clients, for what duetime's own client does not do: the listings and tools
(``list_tasks``, ``runs``, counts, the cron index, paused types), on one server or behind
Sentinel, made on first use; and Redis Cluster (:mod:`.cluster`), whose client the store
uses for everything. A worker that runs tasks does not load redis-py.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import redis
from redis import exceptions as rexc
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import (
    MasterNotFoundError,
    Sentinel,
    SentinelManagedConnection,
    SentinelManagedSSLConnection,
)
from redis.backoff import ExponentialWithJitterBackoff
from redis.driver_info import DriverInfo

from duetime.errors import ConfigError
from duetime.stores.redis.sentinel import SCHEMES as SENTINEL_SCHEMES
from duetime.stores.redis.sentinel import parse_sentinel_url
from duetime.version import VERSION


def driver_info() -> DriverInfo:
    """How redis-py's connections name themselves to the server (``CLIENT SETINFO``, seen
    in ``CLIENT LIST`` as ``lib-name=redis-py(duetime_v<version>)``). Given, it also spares
    every new connection redis-py's own look-up of its version in the installed
    packages' metadata, a few milliseconds each."""
    return DriverInfo(lib_version=redis.__version__).add_upstream_driver("duetime", VERSION)


def connect(
    url: str, *, retries: int = 8, socket_timeout: float | None = None, **options: Any
) -> Redis:
    """A redis-py client for ``url``, one server or behind Sentinel (no connection is made
    yet).

    Raises:
        ConfigError: the URL cannot be used.
    """
    # from_url gives connections no retries: reads would fail on the first dropped idle
    # connection. Reads are safe to repeat. Replies stay bytes: the store decodes each
    # field itself (duetime.stores.wire), so that one value that is not UTF-8 cannot fail
    # a whole reply.
    retry = Retry(ExponentialWithJitterBackoff(base=0.02, cap=1.0), retries)
    options.update(decode_responses=False, retry=retry, socket_timeout=socket_timeout)
    options.setdefault("driver_info", driver_info())
    if urlsplit(url).scheme.lower() in SENTINEL_SCHEMES:
        return connect_sentinel(url, **options)
    try:
        return Redis.from_url(url, **options)
    except ValueError as exc:
        raise ConfigError(f"bad Redis URL: {exc}") from None


class _FollowingConnection(SentinelManagedConnection):
    """A connection that asks the sentinels where the primary is whenever it connects again.

    redis-py's own asks only on the first connect: a connection that dropped (its primary
    died) and is used again reconnects to the address it had, and keeps failing after a
    failover (redis-py issue 3874). The pool keeps its connections between calls, so the
    listings' client meets exactly that.
    """

    async def connect_check_health(
        self, check_health: bool = True, retry_socket_connect: bool = True
    ) -> None:
        pool: Any = self.connection_pool
        if not self.is_connected and pool.is_master:
            self.host, self.port = await pool.get_master_address()
        await super().connect_check_health(check_health, retry_socket_connect)


class _FollowingSSLConnection(_FollowingConnection, SentinelManagedSSLConnection):
    pass


class _Sentinels(Sentinel):
    """Sentinels whose answer is not taken from one in the middle of a failover.

    redis-py reads the primary's address from ``SENTINEL MASTERS``, where the sentinel
    leading a failover still names the old primary until the failover ends (its
    ``failover_in_progress`` flag is set). Once that old primary is back up (restarted,
    with its old data, not yet made a replica) the leader reports it as a healthy primary,
    for about a second in the fault tests, and a connection made then would go to it: the
    other sentinels, which name the new primary, are asked instead.
    """

    def check_master_state(self, state: dict[str, Any], service_name: str) -> bool:
        flags = state.get("flags", "")
        names = flags if isinstance(flags, set) else set(str(flags).split(","))
        if "failover_in_progress" in names:
            return False
        return bool(super().check_master_state(state, service_name))

    async def discover_master(self, service_name: str) -> tuple[Any, Any]:
        """The primary's address, from the first sentinel whose answer can be used; that
        sentinel is then asked first next time.

        redis-py's own moves it to the head by the place it had when the discovery began.
        Discoveries run at once (each connection that reconnects after a failover makes
        one), so one that ended after another had reordered the list wrote its sentinel
        over a third, which no one asked again and the client's aclose() never closed: its
        connections were left open (ResourceWarning). Here the list is read once per
        discovery and the sentinel is moved by identity, so each stays in it once.
        """
        failed: list[str] = []
        for sentinel in list(self.sentinels):
            try:
                masters: Any = await sentinel.sentinel_masters()
            except (rexc.ConnectionError, rexc.TimeoutError) as exc:
                failed.append(f"{sentinel} - {exc!r}")
                continue
            state = masters.get(service_name)
            if state and self.check_master_state(state, service_name):
                self.sentinels.remove(sentinel)
                self.sentinels.insert(0, sentinel)
                forced = self._force_master_ip
                return (state["ip"] if forced is None else forced), state["port"]
        detail = f": {', '.join(failed)}" if failed else ""
        raise MasterNotFoundError(f"no primary found for {service_name!r}{detail}")


class _SentinelRedis(Redis):
    """A client of the primary that also closes its connections to the sentinels."""

    async def aclose(self, close_connection_pool: bool | None = None) -> None:
        pool: Any = self.connection_pool
        await super().aclose(close_connection_pool)
        for sentinel in pool.sentinel_manager.sentinels:
            await sentinel.aclose()


def connect_sentinel(url: str, **options: Any) -> Redis:
    """A client of the primary that the sentinels of ``url`` name (no connection yet).

    Raises:
        ConfigError: the URL cannot be used.
    """
    found = parse_sentinel_url(url)
    sentinel_kwargs: dict[str, Any] = {
        key: options[key] for key in ("socket_timeout", "driver_info") if key in options
    }
    if found.sentinel_password:
        sentinel_kwargs["password"] = found.sentinel_password
    manager = _Sentinels(list(found.sentinels), sentinel_kwargs=sentinel_kwargs)
    options["connection_class"] = _FollowingSSLConnection if found.tls else _FollowingConnection
    client: Redis = manager.master_for(
        found.service,
        redis_class=_SentinelRedis,
        db=found.db,
        username=found.username,
        password=found.password,
        **options,
    )
    return client
