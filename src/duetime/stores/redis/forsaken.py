"""redis-py's client of an event loop that ended, let go of: its connections' sockets
closed without the loop (redis-py's own close needs it), so that none warns when collected."""

from __future__ import annotations

from typing import Any

from duetime.stores.redis.resp.connection import let_go


def let_go_client(client: Any) -> None:
    """Close the sockets of ``client``'s connections (a redis-py ``Redis`` or
    ``RedisCluster``) whose loop is closed; those of a loop still open are left to it."""
    for conn in _connections(client):
        writer = getattr(conn, "_writer", None)
        if writer is None:
            continue
        loop = getattr(writer, "_loop", None)
        if loop is not None and not loop.is_closed():
            continue
        let_go(writer.transport)
        conn._reader = conn._writer = None
    manager = getattr(client, "nodes_manager", None)
    if manager is not None:
        manager.default_node = None  # what redis-py's own close leaves: no warning then


def _connections(client: Any) -> list[Any]:
    """Every connection of a redis-py client's pools (the cluster's: one per node)."""
    manager = getattr(client, "nodes_manager", None)
    if manager is not None:
        nodes = [*manager.startup_nodes.values(), *manager.nodes_cache.values()]
        nodes += [node for slot in manager.slots_cache.values() for node in slot]
        nodes.append(manager.default_node)
        unique = {id(node): node for node in nodes if node is not None}.values()
        return [conn for node in unique for conn in getattr(node, "_connections", ())]
    pool = getattr(client, "connection_pool", None)
    found = [
        *getattr(pool, "_available_connections", ()),
        *getattr(pool, "_in_use_connections", ()),
    ]
    single = getattr(client, "connection", None)
    if single is not None:
        found.append(single)
    # Behind Sentinel, the pool asks the sentinels through clients of its own.
    for sentinel in getattr(getattr(pool, "sentinel_manager", None), "sentinels", ()):
        found += _connections(sentinel)
    return found
