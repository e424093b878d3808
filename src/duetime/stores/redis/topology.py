"""Which Redis a store URL names: one server, the primary of a Sentinel group, or a
Cluster; the cluster's URL; and where duetime's own client connects for the first two.

    redis+cluster://[[user]:password@]host:port[,host:port...][?...]
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

from duetime.errors import ConfigError
from duetime.stores.redis.resp.client import Fixed, Source
from duetime.stores.redis.resp.endpoint import parse_url
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
    userinfo, _, hosts = parts.netloc.rpartition("@")
    username, _, password = userinfo.partition(":")
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
    options: dict[str, Any] = {
        "username": unquote(username) or None,
        "password": unquote(password) or None,
    }
    if parts.scheme.lower().startswith("rediss"):
        options["ssl"] = True
    return nodes, options
