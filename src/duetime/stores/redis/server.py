"""What duetime needs of a Redis server, checked when the store opens and while it runs."""

from __future__ import annotations

import logging
from typing import Any

from duetime.errors import ConfigError
from duetime.stores.redis.config import errors
from duetime.stores.redis.resp.client import RespClient
from duetime.stores.redis.resp.errors import ReplyError

log = logging.getLogger(__name__)

#: Oldest server with everything duetime relies on (ZRANGE BYSCORE forms, GETDEL, Lua
#: effect replication by default).
MIN_VERSION = (6, 2)


def evicts(policy: str) -> bool:
    """Whether a maxmemory-policy may delete task keys (which have no TTL)."""
    return policy.startswith("allkeys")


def eviction_message(policy: str) -> str:
    return (
        f"Redis maxmemory-policy is {policy}: under memory pressure it deletes task keys "
        "without an error, losing tasks. Set it to noeviction "
        "(CONFIG SET maxmemory-policy noeviction, and in redis.conf)"
    )


def check_server(info: dict[str, Any], allow_eviction: bool) -> list[str]:
    """Refuse a server that is too old or evicts keys; return warnings about durability."""
    version = str(info.get("redis_version", "0"))
    parts = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    if parts < MIN_VERSION:
        raise ConfigError(f"Redis {version} is too old: duetime needs 6.2 or newer")
    policy = str(info.get("maxmemory_policy", "noeviction"))
    if evicts(policy):
        message = eviction_message(policy)
        if not allow_eviction:
            raise ConfigError(message + ", or pass allow_eviction=True to accept the loss.")
        log.warning("%s; started anyway because allow_eviction=True", message)
    warnings = []
    if not int(info.get("aof_enabled", 0)):
        warnings.append(
            "Redis has no append-only file: a Redis crash or restart loses every task "
            "written since the last RDB snapshot, or all of them without one. Use "
            "appendonly yes with appendfsync always (nothing lost) or everysec (about a "
            "second lost on power failure)."
        )
    return warnings


def parse_info(raw: bytes) -> dict[str, str]:
    """INFO's reply: ``field:value`` lines, under ``# Section`` headings."""
    found = {}
    for line in raw.decode("utf-8", "replace").splitlines():
        if line and not line.startswith("#"):
            field, _, value = line.partition(":")
            found[field] = value
    return found


async def server_info(link: RespClient, section: str = "default") -> dict[str, str]:
    """The server's INFO ``section``; the client's errors pass."""
    return parse_info(await link.call("INFO", section))


async def replication_warnings(link: RespClient) -> list[str]:
    """What keeps replicated durability from holding on this primary (see
    :func:`replication_problems`)."""
    async with errors("check replication"):
        info = await server_info(link, "replication")
        try:
            found = await link.call("CONFIG", "GET", "min-replicas-to-write")
        except ReplyError:  # CONFIG refused (a managed Redis)
            found = []
    return replication_problems(info, found[1].decode() if len(found) > 1 else None)


def replication_problems(info: dict[str, Any], min_replicas: Any, node: str = "") -> list[str]:
    """What keeps replicated durability from holding on one primary, from its ``INFO
    replication`` and its ``min-replicas-to-write`` (None when it could not be read): no
    replica connected, or the setting at 0 (a primary cut off from its replicas then goes on
    accepting writes, which a failover loses). ``node`` names the primary in a cluster."""
    primary = f"the Redis primary {node}" if node else "the Redis primary"
    warnings = []
    if int(info.get("connected_slaves", 0)) < 1:
        warnings.append(
            f"durability='replicated' but {primary} has no replica connected: "
            "every write to it fails with StoreUnavailable until one is."
        )
    if min_replicas is None:
        warnings.append(
            f"could not read min-replicas-to-write on {primary}: make sure it has "
            "min-replicas-to-write 1, or a primary cut off from its replicas keeps accepting "
            "writes that a failover loses."
        )
    elif int(min_replicas) < 1:
        warnings.append(
            f"durability='replicated' but {primary} has min-replicas-to-write 0: "
            "cut off from its replicas it keeps accepting writes (they fail here, after "
            "their WAIT, but other clients' may not). Set min-replicas-to-write 1 and "
            "min-replicas-max-lag 10 on the primary and its replicas."
        )
    return warnings


def eviction_problems(infos: list[dict[str, Any]], allow_eviction: bool) -> list[str]:
    """An evicting maxmemory-policy in the servers' ``INFO memory`` (every primary's, in a
    cluster), unless ``allow_eviction``."""
    problems: dict[str, None] = {}
    for info in infos:
        policy = str(info.get("maxmemory_policy", "noeviction"))
        if evicts(policy) and not allow_eviction:
            problems[eviction_message(policy) + ": tasks written from now on may be lost."] = None
    return list(problems)


def per_node(infos: Any) -> list[dict[str, Any]]:
    """INFO's reply: one dict per node (a cluster client answers with one per node)."""
    if infos and all(isinstance(v, dict) for v in infos.values()):
        return list(infos.values())
    return [infos]


async def open_server(
    link: RespClient, allow_eviction: bool, replicas: tuple[int, int] | None
) -> list[str]:
    """Check the server behind a new client (closed if it cannot be used); the warnings
    about durability.

    Raises:
        ConfigError: a server too old or evicting keys.
        StoreUnavailable: it cannot be reached.
    """
    try:
        async with errors("connect"):
            info = await server_info(link)
        warnings = check_server(info, allow_eviction)
        if replicas is not None:
            warnings += await replication_warnings(link)
    except BaseException:
        await link.aclose()
        raise
    return warnings
