"""Redis behind Sentinel: the ``redis+sentinel://`` URL, and a client that follows the
primary through a failover.

    redis+sentinel://[[user]:password@]host:port[,host:port...]/<service>[/<db>][?sentinel_password=...]

The password is the data nodes' (the primary's and replicas'); sentinels that require one
of their own take ``sentinel_password``. ``rediss+sentinel://`` speaks TLS to the data
nodes. Each new connection asks the sentinels where the primary is, and one to a primary
that was demoted (it answers READONLY) is dropped: the script runner and the reads send
again, to the new primary. A sentinel in the middle of a failover of the service is not
asked (:class:`_Sentinels`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from redis import exceptions as rexc
from redis.asyncio import Redis
from redis.asyncio.sentinel import (
    MasterNotFoundError,
    Sentinel,
    SentinelManagedConnection,
    SentinelManagedSSLConnection,
)

from duetime.errors import ConfigError

SCHEMES = ("redis+sentinel", "rediss+sentinel")
DEFAULT_SENTINEL_PORT = 26379


@dataclass(frozen=True, slots=True)
class SentinelURL:
    """What a ``redis+sentinel://`` URL names."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    sentinel_password: str | None = None
    tls: bool = False


def parse_sentinel_url(url: str) -> SentinelURL:
    """Read a ``redis+sentinel://`` URL.

    Raises:
        ConfigError: naming what is wrong with it (the password is never shown).
    """
    parts = urlsplit(url)
    userinfo, _, hosts = parts.netloc.rpartition("@")
    username, _, password = userinfo.partition(":")
    sentinels = tuple(_host_port(h) for h in hosts.split(",") if h)
    if not sentinels:
        raise ConfigError("a redis+sentinel:// URL names at least one sentinel, host:port")
    path = [unquote(p) for p in parts.path.split("/") if p]
    if not path or len(path) > 2:
        raise ConfigError(
            "a redis+sentinel:// URL ends with /<service name> or /<service name>/<db>, "
            "e.g. redis+sentinel://sentinel-a:26379,sentinel-b:26379/mymaster/0"
        )
    db = 0
    if len(path) == 2:
        if not path[1].isdigit():
            raise ConfigError(
                f"the database in a redis+sentinel:// URL is a number, not {path[1]!r}"
            )
        db = int(path[1])
    query = parse_qs(parts.query)
    sentinel_password = query.get("sentinel_password", [None])[-1]
    return SentinelURL(
        sentinels,
        path[0],
        db,
        unquote(username) or None,
        unquote(password) or None,
        sentinel_password,
        parts.scheme.lower().startswith("rediss"),
    )


def _host_port(text: str) -> tuple[str, int]:
    host, colon, port = text.rpartition(":")
    if not colon:
        return text, DEFAULT_SENTINEL_PORT
    if not port.isdigit() or not host:
        raise ConfigError(f"a sentinel is host:port, not {text!r}")
    return host.strip("[]"), int(port)


class _FollowingConnection(SentinelManagedConnection):
    """A connection that asks the sentinels where the primary is whenever it connects again.

    redis-py's own asks only on the first connect: a connection that dropped (its primary
    died) and is used again reconnects to the address it had, and keeps failing after a
    failover (redis-py issue 3874). The script runner keeps its connections between calls,
    so it meets exactly that.
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
