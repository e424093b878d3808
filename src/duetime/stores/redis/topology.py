"""Which Redis a store URL names: one server, the primary of a Sentinel group, or a
Cluster; the cluster's URL; and where duetime's own client connects for the first two.

    redis+cluster://[[user]:password@]host:port[,host:port...][/0][?option=value&...]

A cluster URL takes the options of a plain one (:mod:`.resp.endpoint`, the one reader of
them) but ``db``: ``username``, ``password``, ``socket_connect_timeout`` and, with
``rediss+cluster://``, the ``ssl_*`` ones; any other is refused, by name.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from duetime.errors import ConfigError
from duetime.stores.redis.resp.address import TLS, parse_url, query, read_options, userinfo
from duetime.stores.redis.resp.client import Fixed, Source
from duetime.stores.redis.sentinel import SCHEMES as SENTINEL_SCHEMES
from duetime.stores.redis.sentinel import SentinelSource, parse_sentinel_url

CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")


def is_cluster(url: str) -> bool:
    """Whether ``url`` names a Redis Cluster (whose store runs on redis-py: .cluster)."""
    return urlsplit(url).scheme.lower() in CLUSTER_SCHEMES


def source_for(url: str) -> Source:
    """Where duetime's client connects for ``url``: one server, or the primary a Sentinel
    group names.

    Raises:
        ConfigError: the URL cannot be used.
    """
    if urlsplit(url).scheme.lower() in SENTINEL_SCHEMES:
        return SentinelSource(parse_sentinel_url(url))
    return Fixed(parse_url(url))


def parse_cluster_url(url: str) -> tuple[list[tuple[str, int]], dict[str, Any]]:
    """The nodes a ``redis+cluster://`` URL names, and the options of their connections.

    Raises:
        ConfigError: naming what is wrong with it (the password is never shown).
    """
    parts = urlsplit(url)
    credentials, _, hosts = parts.netloc.rpartition("@")
    username, _, password = credentials.partition(":")
    nodes = []
    for text in filter(None, hosts.split(",")):
        host, colon, port = text.rpartition(":")
        if not colon or not port.isdigit() or not host:
            raise ConfigError(f"a cluster node is host:port, not {text!r}")
        nodes.append((host.strip("[]"), int(port)))
    if not nodes:
        raise ConfigError("a redis+cluster:// URL names at least one node, host:port")
    if parts.path.strip("/") not in ("", "0"):
        raise ConfigError("a Redis Cluster has database 0 only: end the URL with /0 or nothing")
    found = userinfo(username, password)
    allowed = ("username", "password", "socket_connect_timeout")
    tls = parts.scheme.lower().startswith("rediss")
    found.update(
        read_options(query(parts.query), tls=tls, allowed=allowed, tls_needs="rediss+cluster://")
    )
    options: dict[str, Any] = {
        "username": found.get("username"),
        "password": found.get("password"),
    }
    if "connect_timeout" in found:
        options["socket_connect_timeout"] = found["connect_timeout"]
    if isinstance(found.get("tls"), TLS):
        options.update(redis_py_tls(found["tls"]))  # type: ignore[arg-type]
    return nodes, options


def redis_py_tls(tls: TLS) -> dict[str, Any]:
    """redis-py's connection options for ``tls`` (a Cluster's client)."""
    return {
        "ssl": True,
        "ssl_cert_reqs": tls.cert_reqs,
        "ssl_ca_certs": tls.ca_certs,
        "ssl_ca_path": tls.ca_path,
        "ssl_certfile": tls.certfile,
        "ssl_keyfile": tls.keyfile,
        "ssl_check_hostname": tls.check_hostname and tls.cert_reqs != "none",
    }


def tls_of(options: dict[str, Any]) -> TLS | None:
    """The TLS of redis-py's connection options (as :func:`redis_py_tls` made them), for
    duetime's own client on a cluster's nodes."""
    if not options.get("ssl"):
        return None
    return TLS(
        cert_reqs=options.get("ssl_cert_reqs") or "required",
        ca_certs=options.get("ssl_ca_certs"),
        ca_path=options.get("ssl_ca_path"),
        certfile=options.get("ssl_certfile"),
        keyfile=options.get("ssl_keyfile"),
        check_hostname=bool(options.get("ssl_check_hostname", True)),
    )
