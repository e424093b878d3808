"""Redis Cluster: a client that follows the topology (redis-py's), and the script runner on
it. The URL (:func:`.topology.parse_cluster_url`) names any nodes: the client discovers
the rest, routes each script to the primary of its keys' slot (every key of a task type
shares one hash tag, so one slot), and follows
``MOVED`` and ``ASK`` replies and failovers by itself. The scripts are resent on a dropped
connection, which they are written to allow. Wake-ups go on each type's shard channel, in
its slot (SPUBLISH): a worker subscribes to the channels of the types it claims, on the
nodes of their slots. Key expiry events are published by the node that holds the key: a
worker listens on every primary.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from redis import exceptions as rexc
from redis.asyncio.cluster import ClusterNode, PipelineCommand, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff

from duetime._backoff import backoff_delay
from duetime._outage import OutageLog
from duetime.errors import StoreUnavailable
from duetime.stores import wire
from duetime.stores.base import WakeCallback
from duetime.stores.redis import keyevents, wake
from duetime.stores.redis.config import errors, raised_in_driver
from duetime.stores.redis.keys import shard_wake_channel
from duetime.stores.redis.redispy import driver_info
from duetime.stores.redis.resp.address import Endpoint
from duetime.stores.redis.resp.client import (
    RETRY_CAP_SECONDS,
    RETRY_FIRST_SECONDS,
    SEND_TRIES,
    Fixed,
    RespClient,
)
from duetime.stores.redis.resp.credentials import Credentials
from duetime.stores.redis.scripts import (
    READ_ONLY,
    SCRIPTS,
    Script,
    check_acknowledged,
    check_reply,
)
from duetime.stores.redis.server import check_server, per_node, replication_problems
from duetime.stores.redis.topology import parse_cluster_url, tls_of

log = logging.getLogger(__name__)

#: How long one read of the shard wake-up channels waits before the listener looks for
#: newly claimed types to subscribe to.
SHARDED_POLL_SECONDS = 0.5
#: How often a listener of key expiry events reads the cluster's primaries again (a replica
#: promoted since publishes the expiries of its slots).
TOPOLOGY_SECONDS = 5.0
#: How often the client tries a command again on a connection error or a moved slot, and
#: its waits: the one retry policy, duetime's own client's (.resp.client).
CLUSTER_RETRIES = SEND_TRIES


def credential_options(credentials: Credentials | None) -> dict[str, Any]:
    """redis-py's cluster client options beyond the URL: the credential hook, if any."""
    if credentials is None:
        return {}
    from duetime.stores.redis.resp.credentials import redis_py_provider

    return {"credential_provider": redis_py_provider(credentials)}


def connect_cluster(url: str, **options: Any) -> RedisCluster:
    """A cluster client for ``url`` (no connection is made yet).

    Raises:
        ConfigError: the URL cannot be used.
    """
    nodes, url_options = parse_cluster_url(url)
    options.pop("health_check_interval", None)
    # Retries on a dropped connection or a moved slot (after which the client reads the
    # topology again); the scripts are safe to send twice.
    backoff = ExponentialWithJitterBackoff(base=RETRY_FIRST_SECONDS, cap=RETRY_CAP_SECONDS)
    retry = Retry(backoff, CLUSTER_RETRIES)
    options["retry"] = retry
    options.setdefault("driver_info", driver_info())
    # reinitialize_steps=0: a MOVED reply updates that slot's node, and never makes the
    # client close itself to read the whole topology again (which breaks the other calls
    # in flight on it, as a resharding showed).
    return RedisCluster(
        startup_nodes=[ClusterNode(host, port) for host, port in nodes],
        reinitialize_steps=0,
        **url_options,
        **options,
    )


async def open_cluster(
    url: str, *, allow_eviction: bool, durability: str, replica_wait_ms: int, **options: Any
) -> tuple[RedisCluster, tuple[int, int] | None, list[str]]:
    """Connect to the cluster and check every primary as one server is checked; the client
    (with ``options`` beyond the URL's), the WAIT its scripts' writes take (replicas,
    timeout ms) if any, and the warnings about durability.

    Raises:
        ConfigError: a primary too old or evicting keys.
        StoreUnavailable: no node answers.
    """
    client = connect_cluster(url, decode_responses=False, **options)
    try:
        async with errors("connect"):
            await client.initialize()
            infos = await client.info(target_nodes=RedisCluster.PRIMARIES)
        warnings: dict[str, None] = {}
        for info in per_node(infos):
            warnings.update(dict.fromkeys(check_server(info, allow_eviction)))
        if durability == "replicated":
            warnings.update(dict.fromkeys(await _replication_warnings(client)))
    except BaseException:
        await client.aclose()
        raise
    replicas = (1, replica_wait_ms) if durability == "replicated" else None
    return client, replicas, list(warnings)


async def _replication_warnings(client: RedisCluster) -> list[str]:
    """What keeps replicated durability from holding, on each primary."""
    warnings = []
    for node in client.get_primaries():
        async with errors("check replication"):
            info = await client.info("replication", target_nodes=node)
            try:
                found = await client.config_get("min-replicas-to-write", target_nodes=node)
            except rexc.ResponseError:  # CONFIG refused (a managed Redis)
                found = {}
        setting = next(iter(found.values()), None) if found else None
        warnings += replication_problems(info, setting, node.name)
    return warnings


class ClusterScriptRunner:
    """Runs the scripts through a cluster client: each goes to the primary of its keys'
    slot (``EVALSHA``, or ``EVAL`` when that node does not know the script yet).

    With ``replicas`` (n, timeout ms), a script that writes goes to that primary with
    ``WAIT n timeout`` after it on the same connection, in one round trip, and raises
    StoreUnavailable unless n replicas acknowledged it; a moved slot or a lost node is
    followed by reading the topology again and sending again.
    """

    def __init__(self, client: RedisCluster, replicas: tuple[int, int] | None = None) -> None:
        self.client = client
        self._replicas = replicas

    async def run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        script = SCRIPTS[name]
        values = [_arg(a) for a in args]
        if self._replicas is not None and name not in READ_ONLY:
            return check_reply(await self._replicated(script, keys, values, self._replicas))
        for attempt in range(1, CLUSTER_RETRIES + 1):
            try:
                return check_reply(await self._send(script, keys, values))
            except (AttributeError, rexc.ClusterError) as exc:
                # ClusterError: redis-py followed redirections until its TTL ran out (a
                # resharding under way); AttributeError: see raised_in_driver.
                if isinstance(exc, AttributeError) and not raised_in_driver(exc):
                    raise
                if attempt == CLUSTER_RETRIES:
                    raise StoreUnavailable(f"Redis Cluster unavailable: {exc!r}") from exc
                await asyncio.sleep(backoff_delay(attempt, RETRY_FIRST_SECONDS, RETRY_CAP_SECONDS))
        raise AssertionError("unreachable")  # pragma: no cover

    async def _send(self, script: Script, keys: list[str], values: list[Any]) -> Any:
        try:
            return await self.client.execute_command(
                "EVALSHA", script.sha, len(keys), *keys, *values
            )
        except rexc.NoScriptError:
            return await self.client.execute_command(
                "EVAL", script.source, len(keys), *keys, *values
            )

    async def _replicated(
        self, script: Script, keys: list[str], values: list[Any], replicas: tuple[int, int]
    ) -> Any:
        call: tuple[Any, ...] = ("EVALSHA", script.sha, len(keys), *keys, *values)
        attempt = 0
        while True:
            node = self.client.get_node_from_key(keys[0])
            commands = [PipelineCommand(0, *call), PipelineCommand(1, "WAIT", *replicas)]
            try:
                if node is None:
                    raise rexc.ClusterDownError(f"no node serves the slot of {keys[0]}")
                await node.execute_pipeline(commands)
                reply, acked = commands[0].result, commands[1].result
            except (rexc.ClusterDownError, rexc.ConnectionError, rexc.TimeoutError, OSError) as exc:
                reply, acked = exc, None
            if isinstance(reply, rexc.NoScriptError) and call[0] == "EVALSHA":
                call = ("EVAL", script.source, len(keys), *keys, *values)  # not an attempt
                continue
            attempt += 1
            if isinstance(reply, _MOVED) and attempt < CLUSTER_RETRIES:
                # The slot moved or its node is gone: read the topology again.
                await asyncio.sleep(backoff_delay(attempt, RETRY_FIRST_SECONDS, RETRY_CAP_SECONDS))
                with contextlib.suppress(rexc.RedisError, OSError):
                    await self.client.nodes_manager.initialize()
                continue
            if isinstance(reply, BaseException):
                raise reply
            check_acknowledged(acked, replicas)
            return reply


#: Replies after which a call is sent again once the topology is read anew.
_MOVED = (
    rexc.MovedError,
    rexc.AskError,
    rexc.TryAgainError,
    rexc.ClusterDownError,
    rexc.ConnectionError,
    rexc.TimeoutError,
    OSError,
)


def _arg(value: Any) -> Any:
    """Text read from the store may hold bytes that are not UTF-8 (as lone surrogates):
    it goes back as those very bytes."""
    return wire.to_bytes(value) if isinstance(value, str) else value


async def enable_key_events(client: RedisCluster) -> list[str]:
    """Make every node publish its key expiries (a replica may become a primary), as
    :func:`.keyevents.enable` does for one server; what stops it, as messages."""
    problems: dict[str, None] = {}
    for node in client.get_nodes():
        link = RespClient(Fixed(_node_endpoint(client, node.host, int(node.port))))
        try:
            problems.update(dict.fromkeys(await keyevents.enable(link)))
        finally:
            await link.aclose()
    return list(problems)


async def key_expiries(
    client: RedisCluster, channel: str, on_key: Callable[[str], None], what: str
) -> None:
    """Call ``on_key`` with every key that expires on any primary, until cancelled: one
    subscription per primary (key events are published by the node that holds the key),
    following the primaries as the topology, read again every TOPOLOGY_SECONDS, changes."""
    listening: dict[tuple[str, int], asyncio.Task[None]] = {}

    def listen(host: str, port: int) -> asyncio.Task[None]:
        node = Fixed(_node_endpoint(client, host, port))
        on_message = lambda data: on_key(wire.text(data))  # noqa: E731
        return asyncio.create_task(
            wake.subscribe(node, channel, on_message, what=f"{what} on {host}:{port}")
        )

    try:
        while True:
            primaries = {(node.host, int(node.port)) for node in client.get_primaries()}
            for addr in primaries - listening.keys():
                listening[addr] = listen(*addr)
            for addr in listening.keys() - primaries:
                listening.pop(addr).cancel()
            await asyncio.sleep(TOPOLOGY_SECONDS)
            try:
                await client.nodes_manager.initialize()
            except (rexc.RedisError, OSError) as exc:
                log.warning("could not read the cluster's topology again: %s", exc)
    finally:
        for task in listening.values():
            task.cancel()
        await asyncio.gather(*listening.values(), return_exceptions=True)


def _cancel_swallowed() -> bool:
    """Whether this task was cancelled and the call it awaited returned all the same: on
    Python 3.11, redis-py's timed read of a shard channel can swallow a cancellation (its
    ``asyncio.wait_for``), which would keep a stopping worker waiting for the next poll."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _node_endpoint(client: RedisCluster, host: str, port: int) -> Endpoint:
    """One node, with the credentials and TLS of the cluster client's connections, for
    duetime's own client."""
    kwargs = client.connection_kwargs
    return Endpoint(
        host=host,
        port=port,
        username=kwargs.get("username"),
        password=kwargs.get("password"),
        tls=tls_of(kwargs),
    )


async def listen_sharded(
    client: RedisCluster,
    namespace: str,
    types: set[str],
    more_types: asyncio.Event,
    on_wake: WakeCallback,
) -> None:
    """Call ``on_wake`` for every wake-up of ``types`` (the types this process claims; the
    set grows, and ``more_types`` is set when it does) until cancelled: each type's shard
    channel is subscribed on the node of its slot, which redis-py's cluster pub/sub follows
    as slots move. A lost connection is made again; ``on_wake("*", 0)`` follows every
    (re)subscription, since wake-ups published meanwhile are lost."""
    failures = 0
    outage = OutageLog("shard wake-up channels", log)
    while True:
        pubsub = client.pubsub()
        subscribed: set[str] = set()
        try:
            while True:
                if wanted := types - subscribed:
                    channels = [shard_wake_channel(namespace, t) for t in sorted(wanted)]
                    await pubsub.ssubscribe(*channels)
                    outage.ok()
                    subscribed |= wanted
                    on_wake("*", 0)
                    failures = 0
                more_types.clear()
                if not subscribed:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(wake.LISTEN_POLL_SECONDS):
                            await more_types.wait()
                    continue
                message = await pubsub.get_sharded_message(
                    ignore_subscribe_messages=True, timeout=SHARDED_POLL_SECONDS
                )
                if _cancel_swallowed():
                    raise asyncio.CancelledError
                if message is not None and message.get("type") in (b"smessage", "smessage"):
                    wake.dispatch(message.get("data"), on_wake)
        except (rexc.RedisError, OSError, AttributeError, RuntimeError) as exc:
            # RuntimeError: redis-py's cluster pub/sub may write to the transport of a node
            # that just died ("unable to perform operation on <TCPTransport closed=True>"),
            # which asyncio raises as such: the channels are lost like any other way.
            outage.failed(exc, "lost (%s); subscribing again", exc, expected=True)
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()
        failures += 1
        await asyncio.sleep(
            backoff_delay(failures, wake.LISTEN_BACKOFF_FIRST, wake.LISTEN_BACKOFF_CAP)
        )
