"""Redis behind Sentinel: the ``redis+sentinel://`` URL, and where its primary is now.

    redis+sentinel://[[user]:password@]host:port[,host:port...]/<service>[/<db>][?option=value&...]

The user and password are the data nodes' (the primary's and replicas'), and so are the
options of a plain URL (:mod:`.resp.endpoint`): ``db``, ``username``, ``password``,
``socket_connect_timeout`` and, with ``rediss+sentinel://`` (TLS to the data nodes),
``ssl_cert_reqs``, ``ssl_ca_certs``, ``ssl_ca_path``, ``ssl_certfile``, ``ssl_keyfile``,
``ssl_check_hostname``. The sentinels take their own: ``sentinel_username``,
``sentinel_password``, and ``sentinel_ssl=true`` (TLS to the sentinels) with the same
``sentinel_ssl_*`` options. Any other option is refused, by name.

:class:`SentinelSource` asks the sentinels where the primary is when a connection is to be
made after a lost one; a connection to a primary that was demoted (it answers READONLY) is
dropped, and the call sent again to the new primary (:mod:`.resp.client`). A sentinel in
the middle of a failover of the service is not asked. This is duetime's one Sentinel
discovery: every call behind Sentinel goes through duetime's own client.
"""

from __future__ import annotations

import asyncio
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

from duetime.errors import ConfigError
from duetime.loops import LoopLock
from duetime.stores.redis.resp.address import (
    CONNECT_SECONDS,
    TLS,
    Endpoint,
    flag,
    query,
    read_options,
    userinfo,
)
from duetime.stores.redis.resp.connection import connect, pack
from duetime.stores.redis.resp.errors import ConnectionLost, ReplyError

SCHEMES = ("redis+sentinel", "rediss+sentinel")
DEFAULT_SENTINEL_PORT = 26379
#: How long one sentinel may take to answer before the next is asked.
ASK_SECONDS = 2.0
#: Flags of a primary in SENTINEL MASTER's reply that make a sentinel's answer unusable:
#: down in its own view or the quorum's, or the failover it leads has not ended (it still
#: names the old primary, which may be back up with its old data, not yet a replica).
UNUSABLE = frozenset({"s_down", "o_down", "failover_in_progress"})


class SentinelURL(NamedTuple):
    """What a ``redis+sentinel://`` URL names."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    sentinel_password: str | None = None
    #: TLS to the data nodes (``rediss+sentinel://``), to the sentinels (``sentinel_ssl``).
    tls: TLS | None = None
    sentinel_username: str | None = None
    sentinel_tls: TLS | None = None
    connect_timeout: float = CONNECT_SECONDS
    #: The most connections duetime's client opens to the primary (``max_connections``).
    max_connections: int | None = None


def parse_sentinel_url(url: str) -> SentinelURL:
    """Read a ``redis+sentinel://`` URL.

    Raises:
        ConfigError: naming what is wrong with it (the password is never shown).
    """
    parts = urlsplit(url)
    credentials, _, hosts = parts.netloc.rpartition("@")
    username, _, password = credentials.partition(":")
    sentinels = tuple(_host_port(h) for h in hosts.split(",") if h)
    if not sentinels:
        raise ConfigError("a redis+sentinel:// URL names at least one sentinel, host:port")
    path = [unquote(p) for p in parts.path.split("/") if p]
    if not path or len(path) > 2:
        raise ConfigError(
            "a redis+sentinel:// URL ends with /<service name> or /<service name>/<db>, "
            "e.g. redis+sentinel://sentinel-a:26379,sentinel-b:26379/mymaster/0"
        )
    options = query(parts.query)
    ours = {k: options.pop(k) for k in list(options) if k.startswith("sentinel_")}
    if len(path) == 2:
        if not path[1].isdigit():
            raise ConfigError(
                f"the database in a redis+sentinel:// URL is a number, not {path[1]!r}"
            )
        options.setdefault("db", path[1])
    data = userinfo(username, password)
    tls = parts.scheme.lower().startswith("rediss")
    theirs = "; the sentinels' own: sentinel_username, sentinel_password, sentinel_ssl"
    theirs += " (and with it the sentinel_ssl_* ones)"
    data.update(read_options(options, tls=tls, tls_needs="rediss+sentinel://", others=theirs))
    sentinel_tls = flag("sentinel_ssl", ours.pop("sentinel_ssl", "false"))
    watchers = read_options(
        ours,
        tls=sentinel_tls,
        allowed=("username", "password"),
        prefix="sentinel_",
        tls_needs="sentinel_ssl=true",
    )
    return SentinelURL(
        sentinels,
        path[0],
        int(data.get("db", 0)),  # type: ignore[call-overload]
        data.get("username"),  # type: ignore[arg-type]
        data.get("password"),  # type: ignore[arg-type]
        watchers.get("password"),  # type: ignore[arg-type]
        data.get("tls"),  # type: ignore[arg-type]
        watchers.get("username"),  # type: ignore[arg-type]
        watchers.get("tls"),  # type: ignore[arg-type]
        data.get("connect_timeout", CONNECT_SECONDS),  # type: ignore[arg-type]
        data.get("max_connections"),  # type: ignore[arg-type]
    )


def _host_port(text: str) -> tuple[str, int]:
    host, colon, port = text.rpartition(":")
    if not colon:
        return text, DEFAULT_SENTINEL_PORT
    if not port.isdigit() or not host:
        raise ConfigError(f"a sentinel is host:port, not {text!r}")
    return host.strip("[]"), int(port)


class SentinelSource:
    """Where the primary of a ``redis+sentinel://`` URL is, for duetime's client
    (:class:`~.resp.client.Source`): asked of the sentinels for the first connection and
    again after a connection failed; the sentinel whose answer was used is asked first
    next time. Discoveries wanted at once (every connection reconnecting after a failover)
    share one."""

    follows_primary = True
    max_connections: int | None = None

    def __init__(self, found: SentinelURL) -> None:
        self.found = found
        self.max_connections = found.max_connections
        self.sentinels = list(found.sentinels)
        self._primary: Endpoint | None = None
        self._looking = LoopLock()

    async def endpoint(self) -> Endpoint:
        primary = self._primary
        if primary is not None:
            return primary
        async with self._looking():
            if self._primary is None:
                self._primary = await self.discover()
            return self._primary

    def lost(self) -> None:
        self._primary = None

    async def discover(self) -> Endpoint:
        """The primary, from the first sentinel whose answer can be used.

        Raises:
            ConnectionLost: no sentinel names a usable primary.
        """
        failed: list[str] = []
        for sentinel in list(self.sentinels):
            try:
                state = await self._ask(*sentinel)
            except (OSError, ReplyError) as exc:
                failed.append(f"{sentinel[0]}:{sentinel[1]} - {exc}")
                continue
            if state is None:
                failed.append(f"{sentinel[0]}:{sentinel[1]} - does not watch it")
                continue
            flags = set(state.get("flags", "").split(","))
            if "master" in flags and not flags & UNUSABLE:
                self.sentinels.remove(sentinel)
                self.sentinels.insert(0, sentinel)
                return self._data_node(state["ip"], int(state["port"]))
        detail = f": {', '.join(failed)}" if failed else ""
        raise ConnectionLost(f"no primary found for {self.found.service!r}{detail}")

    async def _ask(self, host: str, port: int) -> dict[str, str] | None:
        """The sentinel's view of the service's primary; None if it does not watch it."""
        found = self.found
        endpoint = Endpoint(
            host=host,
            port=port,
            username=found.sentinel_username,
            password=found.sentinel_password,
            tls=found.sentinel_tls,
            connect_timeout=ASK_SECONDS,
        )
        conn = await connect(endpoint)
        try:
            async with asyncio.timeout(ASK_SECONDS):
                reply = await conn.request(pack(("SENTINEL", "MASTER", found.service)))
        except TimeoutError:
            raise ConnectionLost(f"no answer in {ASK_SECONDS} s") from None
        finally:
            conn.abort()
        if isinstance(reply, ReplyError):
            if "no such master" in str(reply).lower():
                return None
            raise reply
        fields = [value.decode() for value in reply]
        return dict(zip(fields[::2], fields[1::2], strict=True))

    def _data_node(self, host: str, port: int) -> Endpoint:
        found = self.found
        return Endpoint(
            host=host,
            port=port,
            db=found.db,
            username=found.username,
            password=found.password,
            tls=found.tls,
            connect_timeout=found.connect_timeout,
        )
