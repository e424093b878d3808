"""The Redis store: tasks in sorted sets and hashes, every change one Lua script."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from duetime.clock import StoreClock
from duetime.errors import StoreError, StoreRefused
from duetime.loops import LoopBound
from duetime.stores import wire
from duetime.stores.base import (
    AbortFound,
    Claim,
    NewTask,
    State,
    StoredTask,
    WakeCallback,
)
from duetime.stores.redis import listing, wake
from duetime.stores.redis.calls import RedisCalls, ServerCalls
from duetime.stores.redis.capabilities import RedisCapabilities
from duetime.stores.redis.claiming import RedisLeases
from duetime.stores.redis.codec import (
    SCHEDULE_CHUNK,
    groups,
    inspected,
    priorities,
    score,
)
from duetime.stores.redis.config import (
    RedisConfig,
    driver_errors,
    errors,
    store_error,
)
from duetime.stores.redis.gates import RedisGates
from duetime.stores.redis.keys import (
    TypeKeys,
    call_id,
    call_key,
    shard_wake_channel,
    type_keys,
    wake_channel,
)
from duetime.stores.redis.resp.client import RespClient, Source
from duetime.stores.redis.server import eviction_problems, open_server
from duetime.stores.redis.telemetry import RedisTelemetry
from duetime.stores.redis.topology import is_cluster, source_for
from duetime.stores.runs import StoredRun
from duetime.stores.telemetry import Telemetry

if TYPE_CHECKING:
    from redis.asyncio.cluster import RedisCluster

log = logging.getLogger(__name__)

#: Chunks of one batch in flight at once.
SCHEDULE_WINDOW = 3
#: schedule.lua leaves a resend marker for tasks due within a minute by the server's clock.
#: A call whose tasks are all due later than this, by the server's clock as the store last
#: read it, leaves out the marker's key, and the script neither reads the clock nor marks,
#: which saves part of the call's cost. The rest of the ten minutes is slack for a clock
#: that moved.
MARKER_HORIZON_MS = 10 * 60_000
#: With replicated durability, how long a write waits for a replica to acknowledge it
#: before the call fails: far longer than replication takes on a healthy link.
REPLICA_WAIT_MS = 2000
#: What abort.lua's reply means.
_FOUND: dict[int, AbortFound] = {0: "missing", 1: "running", 2: "cancelled"}


class RedisStore(RedisCapabilities, RedisGates, RedisLeases):
    """A :class:`~duetime.stores.base.Store` on one Redis server (or a Cluster, or behind
    Sentinel), with every capability (:mod:`.capabilities`).

    Every call goes through one interface (:class:`.calls.RedisCalls`): on one server or
    behind Sentinel on duetime's own client (:mod:`.resp`), which also carries the
    subscriptions, so that nothing there loads redis-py; on a Cluster on redis-py's cluster
    client (:mod:`.clustercalls`), which also carries the shard channels and key events.
    """

    def __init__(self, config: RedisConfig) -> None:
        self.config = config
        #: The store's calls (None until open).
        self._calls: RedisCalls | None = None
        #: duetime's own client (None on a Cluster, or not open).
        self._link: RespClient | None = None
        #: redis-py's cluster client (None but on an open Cluster).
        self._client: RedisCluster | None = None
        #: On Redis Cluster: the cluster client, shard channels and per-node key events.
        self._cluster = is_cluster(config.url)
        self._keys: dict[str, TypeKeys] = {}
        self._channel = wake_channel(config.namespace)
        #: The types claimed here (a cluster wakes by type), and a signal of a new one.
        self._claimed: set[str] = set()
        self._more_claimed = asyncio.Event()
        self._warnings: list[str] = []
        #: With replicated durability, the WAIT after each write: (replicas, timeout ms).
        self._replicas = (1, REPLICA_WAIT_MS) if config.durability == "replicated" else None
        # The server's clock as time_ms() last read it (unsynced until then).
        self._server_clock = StoreClock(self.time_ms)
        self.telemetry: Telemetry = RedisTelemetry(config.namespace, self._run)
        #: The loop redis-py's client was made for (duetime's own client follows by itself).
        self._loop = LoopBound()

    @property
    def url(self) -> str:
        return self.config.url

    def copy(self) -> RedisStore:
        return RedisStore(self.config)

    # -- connection ---------------------------------------------------------------------

    @property
    def calls(self) -> RedisCalls:
        """The store's calls, on whichever client its topology has."""
        if self._calls is None:
            raise StoreError("the Redis store is not open")
        if self._loop.moved():
            self._follow_loop()
        return self._calls

    @property
    def cluster_client(self) -> RedisCluster:
        """redis-py's cluster client (on a Cluster only)."""
        if self._loop.moved():
            self._follow_loop()
        if self._client is None:
            raise StoreError("the Redis store is not open on a Redis Cluster")
        return self._client

    @property
    def link(self) -> RespClient:
        """duetime's own client (not on a Cluster)."""
        if self._link is None:
            raise StoreError("the Redis store is not open")
        return self._link

    @property
    def source(self) -> Source:
        """Where duetime's own client connects: its subscriptions connect there too."""
        return self.link.source

    def _follow_loop(self) -> None:
        """The running loop is a new one (duetime's own client follows by itself): on a
        Cluster, redis-py's client of the old one is let go of (not closed: that needs its
        loop, which may be closed) and made again at once, with the calls on it."""
        self._more_claimed = asyncio.Event()
        if not self._cluster or self._calls is None:
            return
        if self._client is not None:
            from duetime.stores.redis.forsaken import let_go_client

            let_go_client(self._client)
        from duetime.stores.redis import cluster as cluster_store
        from duetime.stores.redis.clustercalls import ClusterCalls

        client = cluster_store.connect_cluster(
            self.config.url,
            decode_responses=False,
            **cluster_store.credential_options(self.config.credentials),
        )
        self._client = client
        self._calls = ClusterCalls(client, self._replicas)

    def keys(self, task_type: str) -> TypeKeys:
        keys = self._keys.get(task_type)
        if keys is None:
            keys = self._keys[task_type] = type_keys(self.config.namespace, task_type)
        return keys

    def _wake(self, task_type: str) -> str:
        """The wake channel the scripts publish on for ``task_type`` (see the preamble)."""
        if not self._cluster:
            return self._channel
        return "!" + shard_wake_channel(self.config.namespace, task_type)

    async def open(self) -> None:
        if self._calls is not None:
            return
        config = self.config
        if self._cluster:
            from duetime.stores.redis import cluster as cluster_store  # redis-py's client
            from duetime.stores.redis.clustercalls import ClusterCalls

            cluster, replicas, self._warnings = await cluster_store.open_cluster(
                config.url,
                allow_eviction=config.allow_eviction,
                durability=config.durability,
                replica_wait_ms=REPLICA_WAIT_MS,
                **cluster_store.credential_options(self.config.credentials),
            )
            self._client = cluster
            self._calls = ClusterCalls(cluster, replicas)
            self._loop.moved()  # the loop it was made for
            return
        source = source_for(config.url)
        if config.credentials is not None:
            from duetime.stores.redis.resp.credentials import Credentialed

            source = Credentialed(source, config.credentials)
        link = RespClient(source)
        self._warnings = await open_server(link, config.allow_eviction, self._replicas)
        self._link = link
        self._calls = ServerCalls(link, self._replicas)

    async def close(self) -> None:
        if self._loop.moved():
            self._follow_loop()
        calls, self._calls = self._calls, None
        self._link = self._client = None
        if calls is not None:
            await calls.aclose()

    def durability_warnings(self) -> list[str]:
        """What the server's settings may lose, found when the store was opened."""
        return list(self._warnings)

    async def check_settings(self) -> list[str]:
        """An evicting maxmemory-policy set since the store was opened (unless
        ``allow_eviction``): the worker looks every minute, and logs what it finds."""
        async with errors("check settings"):
            infos = await self.calls.info("memory")
        return eviction_problems(infos, self.config.allow_eviction)

    async def time_ms(self) -> float:
        before = time.monotonic()
        async with errors("TIME"):
            seconds, micros = await self.calls.time()
        server_ms = seconds * 1000 + micros / 1000
        self._server_clock.anchor(server_ms, (before + time.monotonic()) / 2)
        return server_ms

    def _schedule_keys(self, k: TypeKeys, earliest_ms: int) -> list[str]:
        """The schedule script's keys, with the call's marker key unless every task is due
        beyond MARKER_HORIZON_MS (or the store has not read the server's clock yet)."""
        keys = [k.due, k.data, k.dead, k.meta, k.fence, k.order, k.lane, k.group, k.groups]
        keys.append(k.ready)
        clock = self._server_clock
        if not clock.synced or earliest_ms <= clock.now() + MARKER_HORIZON_MS:
            keys.append(call_key(k, call_id()))
        return keys

    # -- writes -------------------------------------------------------------------------

    async def _run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        if self._cluster and self._loop.moved():
            self._follow_loop()
        calls = self._calls
        if calls is None:
            raise StoreError("the Redis store is not open")
        try:
            return await calls.run(name, keys, args)
        except driver_errors() as exc:
            raise store_error(exc, name) from exc

    async def schedule(
        self,
        task_type: str,
        tasks: Sequence[NewTask],
        *,
        only_new: bool = False,
        fence: int | None = None,
    ) -> list[str]:
        k = self.keys(task_type)
        token = "" if fence is None else fence
        head = [self._wake(task_type), task_type, "1" if only_new else "0", token]
        if len(tasks) == 1:
            task = tasks[0]
            keys = self._schedule_keys(k, task.due_ms)
            one = [*head, priorities(tasks), groups(tasks), task.id, score(task), task.record]
            return [wire.text(t) for t in (await self._run("schedule", keys, one))[1:]]
        # Within one batch the last task of an id wins, as if scheduled one by one.
        unique = list({task.id: task for task in tasks}.values())
        chunks: list[tuple[list[str], list[Any]]] = []
        for start in range(0, len(unique), SCHEDULE_CHUNK):
            chunk = unique[start : start + SCHEDULE_CHUNK]
            args: list[Any] = [*head, priorities(chunk), groups(chunk)]
            for task in chunk:
                args += (task.id, score(task), task.record)
            chunks.append((self._schedule_keys(k, min(t.due_ms for t in chunk)), args))
        # A few calls in flight at once, on separate connections: the next chunk is packed
        # while Redis runs the previous one. The chunks hold distinct ids, so their order
        # is free.
        window = asyncio.Semaphore(SCHEDULE_WINDOW)

        async def send(keys: list[str], args: list[Any]) -> list[str]:
            async with window:
                reply = await self._run("schedule", keys, args)
                return [wire.text(t) for t in reply[1:]]

        answers = await asyncio.gather(*(send(keys, args) for keys, args in chunks))
        return [task_id for taken in answers for task_id in taken]

    async def cancel(self, task_type: str, task_id: str) -> bool:
        k = self.keys(task_type)
        keys = [k.due, k.data, k.dead, k.meta, k.order, k.lane, k.group, k.groups]
        reply = await self._run("cancel", keys, [task_id])
        return bool(reply[0])

    async def abort(self, task_type: str, task_id: str) -> AbortFound:
        k = self.keys(task_type)
        keys = [k.due, k.data, k.dead, k.meta, k.lease, k.abort, k.order, k.lane, k.group]
        keys.append(k.groups)
        reply = await self._run("abort", keys, [task_id, self._wake(task_type), task_type])
        return _FOUND[reply[0]]

    async def aborting(self, task_type: str, claims: Sequence[Claim]) -> list[Claim]:
        if not claims:
            return []
        k = self.keys(task_type)
        args: list[Any] = []
        for claim in claims:
            args += (claim.id, claim.token)
        marked = {
            wire.text(task_id) for task_id in await self._run("aborting", [k.lease, k.abort], args)
        }
        return [claim for claim in claims if claim.id in marked]

    async def revive(
        self, task_type: str, task_id: str, due_ms: int, record: str | None = None
    ) -> bool:
        k = self.keys(task_type)
        args = [task_id, due_ms, self._wake(task_type), task_type, record or ""]
        keys = [k.dead, k.due, k.data, k.meta, k.order, k.lane, k.group, k.groups, k.ready]
        reply = await self._run("revive", keys, args)
        return bool(reply[0])

    async def raise_fence(self, task_type: str, token: int) -> bool:
        return bool((await self._run("raise_fence", [self.keys(task_type).fence], [token]))[0])

    async def hasten(self, task_type: str, task_id: str, due_ms: int) -> bool | None:
        k = self.keys(task_type)
        args = [task_id, due_ms, self._wake(task_type), task_type]
        keys = [k.due, k.lease, k.order, k.lane, k.group, k.groups, k.ready]
        moved = (await self._run("hasten", keys, args))[0]
        return None if moved == 2 else bool(moved)

    # -- reads --------------------------------------------------------------------------

    async def get(self, task_type: str, task_id: str) -> StoredTask | None:
        k = self.keys(task_type)
        keys = [k.due, k.running, k.dead, k.data, k.lease, k.meta, k.lane, k.group]
        return inspected(task_id, await self._run("inspect_task", keys, [task_id]))

    async def list_tasks(
        self, task_type: str, state: State, limit: int, offset: int = 0
    ) -> list[StoredTask]:
        async with errors("list"):
            return await listing.list_tasks(self.calls, self.keys(task_type), state, limit, offset)

    async def active_ids(self, task_type: str, limit: int) -> list[str]:
        k = self.keys(task_type)
        return [wire.text(i) for i in await self._run("active_ids", [k.due, k.running], [limit])]

    async def runs(
        self,
        task_type: str,
        *,
        task_id: str | None = None,
        limit: int,
        since_ms: int | None = None,
    ) -> list[StoredRun]:
        if limit < 1:
            raise StoreRefused("bad arguments: limit must be over 0")
        async with errors("runs"):
            key = self.keys(task_type).runs
            return await listing.runs(self.calls, key, task_id, limit, since_ms)

    async def count(self, task_type: str) -> dict[State, int]:
        async with errors("count"):
            return await listing.count(self.calls, self.keys(task_type))

    async def task_types(self) -> list[str]:
        async with errors("task_types"):
            return await listing.task_types(self.calls, self.config.namespace)

    # -- wake-ups -----------------------------------------------------------------------

    async def listen(self, on_wake: WakeCallback) -> None:
        if self._cluster:
            from duetime.stores.redis import cluster as cluster_store

            return await cluster_store.listen_sharded(
                self.cluster_client,
                self.config.namespace,
                self._claimed,
                self._more_claimed,
                on_wake,
            )
        await wake.listen(self.source, self._channel, on_wake)
