"""Redis Cluster: the ``redis+cluster://`` URL, a client that follows the topology, and the
script runner on it.

    redis+cluster://[[user]:password@]host:port[,host:port...][?...]

Any nodes will do: the client discovers the rest, routes each script to the primary of its
keys' slot (every key of a task type shares one hash tag, so one slot), and follows
``MOVED`` and ``ASK`` replies and failovers by itself. The scripts are resent on a dropped
connection, which they are written to allow. Wake-ups are published with ``PUBLISH``, which
a cluster carries to every node: a worker listens on any one node, and on another when that
one fails.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urlsplit

from redis import exceptions as rexc
from redis.asyncio import Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff

from duetime.errors import ConfigError
from duetime.stores import wire
from duetime.stores.redis.connection import errors
from duetime.stores.redis.scripts import SCRIPTS, check_reply
from duetime.stores.redis.server import check_server, per_node

SCHEMES = ("redis+cluster", "rediss+cluster")
#: How often the client tries a command again on a connection error or a moved slot.
CLUSTER_RETRIES = 8


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


def connect_cluster(url: str, **options: Any) -> RedisCluster:
    """A cluster client for ``url`` (no connection is made yet).

    Raises:
        ConfigError: the URL cannot be used.
    """
    nodes, url_options = parse_cluster_url(url)
    options.pop("health_check_interval", None)
    # Retries on a dropped connection or a moved slot (after which the client reads the
    # topology again); the scripts are safe to send twice.
    retry = Retry(ExponentialWithJitterBackoff(base=0.02, cap=1.0), CLUSTER_RETRIES)
    options["retry"] = retry
    return RedisCluster(
        startup_nodes=[ClusterNode(host, port) for host, port in nodes], **url_options, **options
    )


def node_connector(url: str) -> Callable[..., Redis]:
    """A callable that gives, each time, a plain client (with the options it is given) of
    the next node the URL names: what a pub/sub listener reconnects with."""
    nodes, url_options = parse_cluster_url(url)
    turn = itertools.cycle(nodes)

    def connect(**options: Any) -> Redis:
        options.pop("retries", None)
        host, port = next(turn)
        return Redis(host=host, port=port, decode_responses=False, **url_options, **options)

    return connect


async def open_cluster(
    url: str, *, allow_eviction: bool, durability: str
) -> tuple[RedisCluster, ClusterScriptRunner, list[str]]:
    """Connect to the cluster and check every primary as one server is checked; the client,
    its script runner, and the warnings about durability.

    Raises:
        ConfigError: a primary too old or evicting keys, or a durability not given here.
        StoreUnavailable: no node answers.
    """
    if durability != "local":
        raise ConfigError(
            "durability='replicated' is not available on Redis Cluster yet: use Sentinel, "
            "or durability='local'"
        )
    client = connect_cluster(url, decode_responses=False)
    try:
        async with errors("connect"):
            await client.initialize()
            infos = await client.info(target_nodes=RedisCluster.PRIMARIES)
        warnings: dict[str, None] = {}
        for info in per_node(infos):
            warnings.update(dict.fromkeys(check_server(info, allow_eviction)))
    except BaseException:
        await client.aclose()
        raise
    return client, ClusterScriptRunner(client), list(warnings)


class ClusterScriptRunner:
    """Runs the scripts through a cluster client: each goes to the primary of its keys'
    slot (``EVALSHA``, or ``EVAL`` when that node does not know the script yet)."""

    def __init__(self, client: RedisCluster) -> None:
        self.client = client

    async def run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        script = SCRIPTS[name]
        values = [_arg(a) for a in args]
        try:
            reply = await self.client.execute_command(
                "EVALSHA", script.sha, len(keys), *keys, *values
            )
        except rexc.NoScriptError:
            reply = await self.client.execute_command(
                "EVAL", script.source, len(keys), *keys, *values
            )
        return check_reply(reply)


def _arg(value: Any) -> Any:
    """Text read from the store may hold bytes that are not UTF-8 (as lone surrogates):
    it goes back as those very bytes."""
    return wire.to_bytes(value) if isinstance(value, str) else value
