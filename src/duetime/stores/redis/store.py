"""The Redis store: tasks in sorted sets and hashes, every change one Lua script."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from redis import exceptions as rexc
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff

from duetime.backoff import backoff_delay
from duetime.clock import StoreClock
from duetime.errors import ConfigError, StoreError, StoreUnavailable
from duetime.stores.base import (
    STATES,
    Claim,
    ClaimBatch,
    NewTask,
    Outcome,
    State,
    StoredTask,
    WakeCallback,
)
from duetime.stores.redis import scripts
from duetime.stores.redis.keys import (
    TypeKeys,
    call_key,
    cron_index,
    parse_lease,
    type_keys,
    wake_channel,
)

log = logging.getLogger(__name__)

#: Oldest server with everything duetime relies on (ZRANGE BYSCORE forms, GETDEL, Lua
#: effect replication by default).
MIN_VERSION = (6, 2)
#: Most tasks written by one script call. Lua's unpack() has a limit of about 8,000
#: values, and a short script keeps the server responsive for other clients.
SCHEDULE_CHUNK = 1000
#: How long a claim's reply is kept for a resend of the call (the script runner resends
#: within a few seconds).
CLAIM_REPLAY_MS = 15_000
#: Chunks of one batch in flight at once.
SCHEDULE_WINDOW = 3
#: schedule.lua leaves a resend marker for tasks due within a minute by the server's clock.
#: A call whose tasks are all due later than this, by the server's clock as the store last
#: read it, leaves out the marker's key, and the script neither reads the clock nor marks:
#: a tenth of a call's cost. The rest of the ten minutes is slack for a clock that moved.
MARKER_HORIZON_MS = 10 * 60_000
#: Most outcomes settled by one script call, for the same reasons.
SETTLE_CHUNK = 500
#: Wake-up listener: how long one read waits, and the back-off cap after a lost connection.
LISTEN_POLL_SECONDS = 1.0
LISTEN_BACKOFF_FIRST = 0.05
LISTEN_BACKOFF_CAP = 5.0


@dataclass(frozen=True, slots=True, kw_only=True)
class RedisConfig:
    """How to reach Redis and which tasks are ours.

    Attributes:
        url: a ``redis://``, ``rediss://`` or ``unix://`` URL (redis-py's forms).
        namespace: keeps several apps apart on one server.
        allow_eviction: start even though the server evicts keys under memory pressure
            (``allkeys-*`` policies), which loses tasks without an error. Off by default.
    """

    url: str
    namespace: str = "default"
    allow_eviction: bool = False


@contextlib.asynccontextmanager
async def _errors(what: str) -> AsyncIterator[None]:
    """Turn redis-py's exceptions into duetime's, and bound how long a read may take (the
    client has no socket timeout of its own: see scripts.CALL_TIMEOUT_SECONDS)."""
    try:
        async with asyncio.timeout(scripts.CALL_TIMEOUT_SECONDS):
            yield
    except (rexc.ConnectionError, rexc.TimeoutError, OSError) as exc:
        raise StoreUnavailable(f"Redis unavailable during {what}: {exc}") from exc
    except rexc.RedisError as exc:
        raise StoreError(f"Redis error during {what}: {exc}") from exc


def _ms(value: str | float | int) -> int:
    return int(float(value))


class RedisStore:
    """A :class:`~duetime.stores.base.Store` on one Redis server (or a Sentinel-managed one)."""

    def __init__(self, config: RedisConfig) -> None:
        self.config = config
        self._client: Redis | None = None
        self._scripts: scripts.ScriptRunner | None = None
        self._keys: dict[str, TypeKeys] = {}
        self._channel = wake_channel(config.namespace)
        self._warnings: list[str] = []
        # The server's clock as time_ms() last read it (unsynced until then).
        self._server_clock = StoreClock(self.time_ms)

    # -- connection ---------------------------------------------------------------------

    @property
    def client(self) -> Redis:
        if self._client is None:
            raise StoreError("the Redis store is not open")
        return self._client

    def keys(self, task_type: str) -> TypeKeys:
        keys = self._keys.get(task_type)
        if keys is None:
            keys = self._keys[task_type] = type_keys(self.config.namespace, task_type)
        return keys

    def _connect(
        self, *, retries: int = 8, socket_timeout: float | None = None, **options: Any
    ) -> Redis:
        # from_url gives connections no retries: reads would fail on the first dropped
        # idle connection. Reads are safe to repeat; scripts have their own runner.
        retry = Retry(ExponentialWithJitterBackoff(base=0.02, cap=1.0), retries)
        try:
            return Redis.from_url(
                self.config.url,
                decode_responses=True,
                retry=retry,
                socket_timeout=socket_timeout,
                **options,
            )
        except ValueError as exc:
            raise ConfigError(f"bad Redis URL: {exc}") from None

    async def open(self) -> None:
        if self._client is not None:
            return
        client = self._connect()
        try:
            async with _errors("connect"):
                info = await client.info()
            self._warnings = _check_server(info, self.config.allow_eviction)
        except BaseException:
            await client.aclose()
            raise
        self._client = client
        self._scripts = scripts.ScriptRunner(client)

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            self._scripts = None
            await client.aclose()

    def durability_warnings(self) -> list[str]:
        """What the server's settings may lose, found when the store was opened."""
        return list(self._warnings)

    async def check_settings(self) -> list[str]:
        """An evicting maxmemory-policy set since the store was opened (unless
        ``allow_eviction``): the worker looks every minute, and logs what it finds."""
        async with _errors("check settings"):
            info = await self.client.info("memory")
        policy = str(info.get("maxmemory_policy", "noeviction"))
        if _evicts(policy) and not self.config.allow_eviction:
            return [_eviction_message(policy) + ": tasks written from now on may be lost."]
        return []

    async def time_ms(self) -> float:
        before = time.monotonic()
        async with _errors("TIME"):
            seconds, micros = await self.client.time()
        server_ms = seconds * 1000 + micros / 1000
        self._server_clock.anchor(server_ms, (before + time.monotonic()) / 2)
        return server_ms

    def _schedule_keys(self, k: TypeKeys, earliest_ms: int) -> list[str]:
        """The schedule script's keys, with the call's marker key unless every task is due
        beyond MARKER_HORIZON_MS (or the store has not read the server's clock yet)."""
        keys = [k.due, k.data, k.dead, k.meta]
        clock = self._server_clock
        if not clock.synced or earliest_ms <= clock.now() + MARKER_HORIZON_MS:
            keys.append(call_key(k, _call_id()))
        return keys

    # -- writes -------------------------------------------------------------------------

    async def _run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        runner = self._scripts
        if runner is None:
            raise StoreError("the Redis store is not open")
        try:
            return await runner.run(name, keys, args)
        except (rexc.ConnectionError, rexc.TimeoutError, OSError) as exc:
            raise StoreUnavailable(f"Redis unavailable during {name}: {exc}") from exc
        except rexc.RedisError as exc:
            raise StoreError(f"Redis error during {name}: {exc}") from exc

    async def schedule(
        self, task_type: str, tasks: Sequence[NewTask], *, only_new: bool = False
    ) -> list[str]:
        k = self.keys(task_type)
        mode = "1" if only_new else "0"
        if len(tasks) == 1:
            task = tasks[0]
            keys = self._schedule_keys(k, task.due_ms)
            one = [self._channel, task_type, mode, task.id, task.due_ms, task.record]
            return (await self._run("schedule", keys, one))[1:]  # type: ignore[no-any-return]
        # Within one batch the last task of an id wins, as if scheduled one by one.
        unique = list({task.id: task for task in tasks}.values())
        chunks: list[tuple[list[str], list[Any]]] = []
        for start in range(0, len(unique), SCHEDULE_CHUNK):
            chunk = unique[start : start + SCHEDULE_CHUNK]
            args: list[Any] = [self._channel, task_type, mode]
            for task in chunk:
                args += (task.id, task.due_ms, task.record)
            chunks.append((self._schedule_keys(k, min(t.due_ms for t in chunk)), args))
        # A few calls in flight at once, on separate connections: the next chunk is packed
        # while Redis runs the previous one. The chunks hold distinct ids, so their order
        # is free.
        window = asyncio.Semaphore(SCHEDULE_WINDOW)

        async def send(keys: list[str], args: list[Any]) -> list[str]:
            async with window:
                reply = await self._run("schedule", keys, args)
                return reply[1:]  # type: ignore[no-any-return]

        answers = await asyncio.gather(*(send(keys, args) for keys, args in chunks))
        return [task_id for taken in answers for task_id in taken]

    async def cancel(self, task_type: str, task_id: str) -> bool:
        k = self.keys(task_type)
        reply = await self._run("cancel", [k.due, k.data, k.dead, k.meta], [task_id])
        return bool(reply[0])

    async def revive(
        self, task_type: str, task_id: str, due_ms: int, record: str | None = None
    ) -> bool:
        k = self.keys(task_type)
        args = [task_id, due_ms, self._channel, task_type, record or ""]
        reply = await self._run("revive", [k.dead, k.due, k.data, k.meta], args)
        return bool(reply[0])

    async def claim(
        self,
        task_type: str,
        *,
        now_ms: int,
        limit: int,
        lease_ms: int,
        max_stalls: int,
        at_most_once: bool,
        lookahead_ms: int = 0,
    ) -> ClaimBatch:
        k = self.keys(task_type)
        keys = [k.due, k.running, k.data, k.lease, k.meta, k.dead, k.seq, call_key(k, _call_id())]
        mode = "1" if at_most_once else "0"
        args = [now_ms, limit, lease_ms, max_stalls, mode, lookahead_ms, CLAIM_REPLAY_MS]
        reply = await self._run("claim_due", keys, args)
        claims = [
            Claim(reply[i], reply[i + 1], reply[i + 2], int(reply[i + 3]), reply[i + 4])
            for i in range(2, len(reply), 5)
        ]
        next_ms = _ms(reply[0]) if reply[0] != "" else None
        return ClaimBatch(claims, next_ms, reply[1])

    async def settle(self, task_type: str, outcomes: Sequence[Outcome], now_ms: int) -> list[bool]:
        k = self.keys(task_type)
        keys = [k.due, k.running, k.data, k.lease, k.meta, k.dead]
        kept: list[bool] = []
        for start in range(0, len(outcomes), SETTLE_CHUNK):
            chunk = outcomes[start : start + SETTLE_CHUNK]
            # Plain completions go first, in one argument; the script answers in the order
            # it was given, and the answers are put back in the order of the outcomes.
            done = [o for o in chunk if o.op == "done" and not o.dead_id and o.spawn is None]
            lines = [f"{o.claim.token}|{o.claim.id}" for o in done]
            if lines and not any("\n" in line for line in lines):
                rest = [o for o in chunk if o.op != "done" or o.dead_id or o.spawn is not None]
                args: list[Any] = [now_ms, self._channel, task_type, "done*", "\n".join(lines)]
            else:
                done, rest = [], list(chunk)
                args = [now_ms, self._channel, task_type]
            for o in rest:
                args += _settle_args(o)
            reply = await self._run("settle", keys, args)
            answers = dict(zip(map(id, done + rest), reply, strict=True))
            kept += (answers[id(o)] == 1 for o in chunk)
        return kept

    async def extend(
        self, task_type: str, claims: Sequence[Claim], deadline_ms: int
    ) -> list[Claim]:
        if not claims:
            return []
        k = self.keys(task_type)
        args: list[Any] = [deadline_ms]
        for claim in claims:
            args += (claim.id, claim.token)
        lost = set(await self._run("extend_lease", [k.running, k.lease], args))
        return [claim for claim in claims if claim.id in lost]

    # -- reads --------------------------------------------------------------------------

    async def get(self, task_type: str, task_id: str) -> StoredTask | None:
        k = self.keys(task_type)
        keys = [k.due, k.running, k.dead, k.data, k.lease, k.meta]
        reply = await self._run("inspect_task", keys, [task_id])
        due, running, dead, record, lease, stalls, error = (*reply, *[None] * 7)[:7]
        if due is not None:
            return _stored(task_id, "due", due, _ms(due), record, stalls, error)
        if running is not None and lease is not None:
            _, claimed_due = parse_lease(lease)
            return _stored(task_id, "running", running, claimed_due, record, stalls, error)
        if dead is not None:
            return _stored(task_id, "dead", dead, _ms(dead), record, stalls, error)
        return None

    async def list_tasks(
        self, task_type: str, state: State, limit: int, offset: int = 0
    ) -> list[StoredTask]:
        k = self.keys(task_type)
        index = {"due": k.due, "running": k.running, "dead": k.dead}[state]
        async with _errors("list"):
            rows: list[tuple[str, float]] = await self.client.zrange(  # type: ignore[assignment]
                index, offset, offset + limit - 1, withscores=True
            )
            if not rows:
                return []
            ids = [task_id for task_id, _ in rows]
            fields = [f"{kind}:{task_id}" for task_id in ids for kind in ("s", "e")]
            async with self.client.pipeline(transaction=False) as pipe:
                pipe.hmget(k.data, ids)
                pipe.hmget(k.lease, ids)
                pipe.hmget(k.meta, fields)
                records, leases, meta = await pipe.execute()
        out = []
        for n, (task_id, score) in enumerate(rows):
            due = _ms(score)
            if state == "running" and leases[n]:
                due = parse_lease(leases[n])[1]
            out.append(
                _stored(task_id, state, score, due, records[n], meta[2 * n], meta[2 * n + 1])
            )
        return out

    async def count(self, task_type: str) -> dict[State, int]:
        k = self.keys(task_type)
        async with _errors("count"), self.client.pipeline(transaction=False) as pipe:
            for index in (k.due, k.running, k.dead):
                pipe.zcard(index)
            counts = await pipe.execute()
        return dict(zip(STATES, counts, strict=True))

    # -- cron schedule names ---------------------------------------------------------------

    async def add_schedule_name(self, name: str, task_type: str) -> str:
        index = cron_index(self.config.namespace)
        async with _errors("add_schedule_name"):
            await self.client.hsetnx(index, name, task_type)
            owner = await self.client.hget(index, name)
        return str(owner) if owner else task_type

    async def remove_schedule_name(self, name: str) -> None:
        async with _errors("remove_schedule_name"):
            await self.client.hdel(cron_index(self.config.namespace), name)

    async def schedule_names(self) -> dict[str, str]:
        async with _errors("schedule_names"):
            names = await self.client.hgetall(cron_index(self.config.namespace))
        return {str(name): str(owner) for name, owner in names.items()}

    # -- wake-ups -----------------------------------------------------------------------

    async def listen(self, on_wake: WakeCallback) -> None:
        failures = 0
        while True:
            # A connection of its own: a subscribed connection can carry nothing else.
            # No silent retries: a reconnect must be seen, to look again for what was missed.
            client = self._connect(retries=0, health_check_interval=10)
            pubsub = client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self._channel)
                # Anything published while we were not subscribed is lost: look again.
                on_wake("*", 0)
                failures = 0
                while True:
                    message = await pubsub.get_message(timeout=LISTEN_POLL_SECONDS)
                    if message is not None:
                        _dispatch(message.get("data"), on_wake)
            except (rexc.ConnectionError, rexc.TimeoutError, OSError) as exc:
                log.warning("wake-up channel lost (%s); reconnecting", exc)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]
                with contextlib.suppress(Exception):
                    await client.aclose()
            failures += 1
            await asyncio.sleep(backoff_delay(failures, LISTEN_BACKOFF_FIRST, LISTEN_BACKOFF_CAP))


def _new_call_ids() -> None:
    """A new random prefix for this process's call ids (again in a forked child, which would
    otherwise repeat its parent's ids)."""
    global _call_prefix, _call_count
    _call_prefix = os.urandom(8).hex()
    _call_count = itertools.count()


_call_prefix = ""
_call_count = itertools.count()
_new_call_ids()
os.register_at_fork(after_in_child=_new_call_ids)


def _call_id() -> str:
    """A call id unique across processes: the process's random prefix and a counter (a
    system call for random bytes on every call would cost a few microseconds of it)."""
    return f"{_call_prefix}{next(_call_count):x}"


def _settle_args(o: Outcome) -> tuple[Any, ...]:
    """The settle script's arguments for one outcome (see settle.lua)."""
    c = o.claim
    if o.op == "done":
        args: tuple[Any, ...] = ("done", c.id, c.token)
    elif o.op == "release":
        args = ("release", c.id, c.token, o.due_ms)
    elif o.op == "dead":
        args = ("dead", c.id, c.token, o.record, o.error)
    elif o.op == "next":
        args = ("next", c.id, c.token, o.due_ms, o.record)
    else:
        args = ("retry", c.id, c.token, o.due_ms, o.record, o.error)
    if o.dead_id:
        args += ("file", o.dead_id, o.dead_record, o.error)
    if o.spawn is not None:
        args += ("spawn", o.spawn.id, o.spawn.due_ms, o.spawn.record)
    return args


def _stored(
    task_id: str,
    state: State,
    score: str | float,
    due_ms: int,
    record: str | None,
    stalls: str | None,
    error: str | None,
) -> StoredTask:
    return StoredTask(task_id, state, _ms(score), due_ms, record, int(stalls or 0), error)


def _dispatch(data: object, on_wake: WakeCallback) -> None:
    if not isinstance(data, str):
        return
    task_type, _, due = data.partition(" ")
    try:
        on_wake(task_type, _ms(due))
    except ValueError:
        log.debug("ignored a malformed wake-up message %r", data)


def _evicts(policy: str) -> bool:
    """Whether a maxmemory-policy may delete task keys (which have no TTL)."""
    return policy.startswith("allkeys")


def _eviction_message(policy: str) -> str:
    return (
        f"Redis maxmemory-policy is {policy}: under memory pressure it deletes task keys "
        "without an error, losing tasks. Set it to noeviction "
        "(CONFIG SET maxmemory-policy noeviction, and in redis.conf)"
    )


def _check_server(info: dict[str, Any], allow_eviction: bool) -> list[str]:
    """Refuse a server that is too old or evicts keys; return warnings about durability."""
    version = str(info.get("redis_version", "0"))
    parts = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    if parts < MIN_VERSION:
        raise ConfigError(f"Redis {version} is too old: duetime needs 6.2 or newer")
    policy = str(info.get("maxmemory_policy", "noeviction"))
    if _evicts(policy):
        message = _eviction_message(policy)
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
