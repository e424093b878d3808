"""What the Redis store does beyond the core protocol
(:mod:`duetime.stores.capabilities`): expiring entries, writes on conditions, key expiry
events and the index of schedule names."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from duetime.errors import ConfigError
from duetime.stores import wire
from duetime.stores.base import NewTask
from duetime.stores.conditional import Answer, Condition, Pending, Verdict, check_conditions
from duetime.stores.redis import keyevents, names, wake
from duetime.stores.redis.codec import SCHEDULE_CHUNK
from duetime.stores.redis.config import RedisConfig, errors
from duetime.stores.redis.keys import (
    TypeKeys,
    call_id,
    call_key,
    event_key,
    finished_key,
    keyevent_channel,
)
from duetime.stores.redis.resp.client import RespClient, Source

if TYPE_CHECKING:
    from redis.asyncio.cluster import RedisCluster

    from duetime.stores.redis.calls import RedisCalls

#: How long a conditional write's reply is kept for a resend of the call (the script runner
#: resends within a few seconds), as a claim's is.
CONDITIONAL_REPLAY_MS = 15_000
_PENDING_CODE: dict[Pending, str] = {"waits": "w", "runs": "r"}
_PENDING: dict[str, Pending] = {"w": "waits", "r": "runs"}
_VERDICTS: dict[int, Verdict] = {1: "written", 2: "kept", 3: "recent", 4: "changed"}


def _answer(code: int, first: Any, second: Any) -> Answer:
    """One task's answer of schedule_if.lua."""
    verdict = _VERDICTS[int(code)]
    if verdict == "changed":
        return Answer(verdict, None, _PENDING.get(wire.text(first), "none"), wire.text(second))
    if verdict == "recent":
        return Answer(verdict)
    return Answer(verdict, wire.due_ms(first))  # a pending score may hold microseconds


class _Core(Protocol):
    """What the capabilities use of the store."""

    config: RedisConfig
    _cluster: bool
    _replicas: tuple[int, int] | None

    @property
    def calls(self) -> RedisCalls: ...

    @property
    def cluster_client(self) -> RedisCluster: ...

    def keys(self, task_type: str) -> TypeKeys: ...

    def _wake(self, task_type: str) -> str: ...

    @property
    def link(self) -> RespClient: ...

    @property
    def source(self) -> Source: ...

    async def _run(self, name: str, keys: list[str], args: list[Any]) -> Any: ...


class RedisCapabilities:
    """The Redis store's capabilities, as a part of :class:`~.store.RedisStore`."""

    # -- expiring entries -----------------------------------------------------------------

    async def put_entry(
        self: _Core, task_type: str, entries: Sequence[NewTask], *, keep_ttl: bool, now_ms: int
    ) -> list[int]:
        k = self.keys(task_type)
        keys = [k.due, k.data, k.dead, k.meta, k.order, k.lane, k.group, k.groups, k.ready]
        dues: list[int] = []
        for start in range(0, len(entries), SCHEDULE_CHUNK):
            args: list[Any] = [self._wake(task_type), task_type, now_ms, "1" if keep_ttl else "0"]
            for entry in entries[start : start + SCHEDULE_CHUNK]:
                args += (entry.id, entry.due_ms, entry.record)
            dues += (wire.ms(at) for at in await self._run("put_entry", keys, args))
        return dues

    async def remove_entry(self: _Core, task_type: str, task_id: str, now_ms: int) -> bool:
        k = self.keys(task_type)
        reply = await self._run("remove_entry", [k.due, k.data, k.meta], [task_id, now_ms])
        return bool(reply[0])

    # -- writes on conditions ----------------------------------------------------------------

    async def schedule_if(
        self: _Core, task_type: str, tasks: Sequence[Condition], now_ms: int
    ) -> list[Answer]:
        check_conditions(tasks)
        k = self.keys(task_type)
        answers: list[Answer] = []
        for start in range(0, len(tasks), SCHEDULE_CHUNK):
            chunk = tasks[start : start + SCHEDULE_CHUNK]
            keys = [k.due, k.data, k.dead, k.meta, k.lease, call_key(k, call_id())]
            keys += (k.order, k.lane, k.group, k.groups, k.ready)
            args: list[Any] = [self._wake(task_type), task_type, now_ms, CONDITIONAL_REPLAY_MS]
            for c in chunk:
                keys.append(finished_key(k, c.task.id))
                expected = "" if c.pending == "none" else _PENDING_CODE[c.pending] + c.expected
                args += (c.task.id, c.task.due_ms, c.task.record, c.mode, c.unique_ms)
                args += (expected, "1" if c.keep_due else "0", c.task.priority, c.task.group)
                args += (c.changes, c.max_bytes)
            reply = await self._run("schedule_if", keys, args)
            answers += (_answer(*reply[i : i + 3]) for i in range(0, len(reply), 3))
        return answers

    # -- key expiry events ------------------------------------------------------------------

    async def enable_key_events(self: _Core) -> list[str]:
        if self._cluster:
            from duetime.stores.redis import cluster as cluster_store

            return await cluster_store.enable_key_events(self.cluster_client)
        return await keyevents.enable(self.link)

    async def key_expiries(self: _Core, db: int, on_key: Callable[[str], None]) -> None:
        channel, what = keyevent_channel(db), f"key expiry events of db {db}"
        if self._cluster:
            from duetime.stores.redis import cluster as cluster_store

            return await cluster_store.key_expiries(self.cluster_client, channel, on_key, what)
        on_message = lambda data: on_key(wire.text(data))  # noqa: E731
        await wake.subscribe(self.source, channel, on_message, what=what)

    async def schedule_event(
        self: _Core, task_type: str, event: str, task: NewTask, *, window_ms: int
    ) -> bool:
        k = self.keys(task_type)
        keys = [event_key(k, event), k.due, k.data, k.dead, k.meta, k.order, k.lane, k.group]
        keys += (k.groups, k.ready)
        args = [window_ms, self._wake(task_type), task_type, task.id, task.due_ms, task.record]
        return bool((await self._run("schedule_event", keys, args))[0])

    def check_key_database(self: _Core, db: int) -> None:
        if self._cluster and db != 0:
            raise ConfigError(f"a Redis Cluster has database 0 only, not {db}")

    # -- cron schedule names ---------------------------------------------------------------

    async def add_schedule_name(self: _Core, name: str, task_type: str) -> str:
        async with errors("add_schedule_name"):
            return await names.add(
                self.calls, self.config.namespace, name, task_type, self._replicas
            )

    async def remove_schedule_name(self: _Core, name: str) -> None:
        async with errors("remove_schedule_name"):
            await names.remove(self.calls, self.config.namespace, name, self._replicas)

    async def schedule_names(self: _Core) -> dict[str, str]:
        async with errors("schedule_names"):
            return await names.read(self.calls, self.config.namespace)
