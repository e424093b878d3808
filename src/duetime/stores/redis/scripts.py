"""The Lua scripts of the Redis store: loaded from ``lua/*.lua``, run by SHA, reloaded on NOSCRIPT.

Each script opens with a header giving its KEYS, ARGV, reply and error codes. Scripts
report refusals as a reply ``[code, detail]`` with a negative code, before writing
anything; :func:`check_reply` turns those into :class:`~duetime.errors.StoreRefused`, or,
for a write under a lease that was lost, :class:`~duetime.errors.LeaseLost`.

Scripts are sent on the hot paths (schedule, claim, settle), so :class:`ScriptRunner` sends
them with the command packed by hiredis, in C: redis-py packs arguments in Python, which
costs more than the round trip. The runner keeps the connections it has used rather than
handing them back to the pool after each call, because redis-py 8's pool records every take
and return for its metrics, a measurable share of a call's CPU (docs/performance.md). Every
script gives the same result when run twice, so a call that met a dropped connection is
sent again.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from redis import exceptions as rexc
from redis.asyncio import Redis
from redis.asyncio.connection import AbstractConnection

from duetime.backoff import backoff_delay
from duetime.errors import LeaseLost, StoreError, StoreRefused, StoreUnavailable
from duetime.stores import wire
from duetime.stores.packaged import folder as package_folder
from duetime.stores.redis.source import assemble

_hiredis_pack: Callable[..., Any] | None
try:
    from hiredis import pack_command as _hiredis_pack
except ImportError:  # pragma: no cover - hiredis comes with redis[hiredis]
    _hiredis_pack = None

_PREAMBLE = "_preamble.lua"
#: Shared functions beyond the preamble, put after it in the scripts that use them (each
#: script takes only the definitions it uses: :mod:`.source`).
INCLUDES = {
    "claim_due": ("_gate.lua", "_lanes.lua", "_groups.lua"),
    "schedule": ("_lanes.lua", "_groups.lua"),
    "schedule_if": ("_lanes.lua", "_groups.lua"),
    "settle": ("_lanes.lua", "_groups.lua"),
    "revive": ("_lanes.lua", "_groups.lua"),
    "hasten": ("_lanes.lua", "_groups.lua"),
    "put_entry": ("_lanes.lua", "_groups.lua"),
    "schedule_event": ("_lanes.lua", "_groups.lua"),
    "cancel": ("_groups.lua",),
    "abort": ("_groups.lua",),
}
NAMES = (
    "schedule",
    "schedule_if",
    "raise_fence",
    "claim_due",
    "settle",
    "extend_lease",
    "cancel",
    "abort",
    "aborting",
    "revive",
    "inspect_task",
    "put_entry",
    "remove_entry",
    "schedule_event",
    "hasten",
    "active_ids",
    "beat",
    "live_workers",
    "add_counts",
    "read_counts",
    "pause",
    "hold",
)

#: The scripts that only read: no WAIT follows them.
READ_ONLY = frozenset({"inspect_task", "active_ids", "live_workers", "read_counts", "aborting"})
#: What each negative code means. -3 carries the server's own error (out of memory, say);
#: -4 (a write under a lost lease: task type, token, fence) is LeaseLost.
CODES = {-1: "a key holds a value of another type", -2: "bad arguments", -3: "the server refused"}
FENCED = -4
#: A call that meets a dropped or refused connection is sent again this many times, after
#: waits doubling from the first up to the cap: about 3 s of outage in all.
SEND_TRIES = 8
RETRY_FIRST_SECONDS = 0.02
#: A call that gets no reply in this long (up to a second more) is given up on its
#: connection and sent again (scripts are safe to resend). Long enough for a big batch on a
#: slow server.
CALL_TIMEOUT_SECONDS = 10.0
RETRY_CAP_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class Script:
    name: str
    source: str
    sha: str


def _load(name: str) -> Script:
    folder = package_folder("duetime.stores.redis", "lua")
    shared = [(folder / part).read_text() for part in (_PREAMBLE, *INCLUDES.get(name, ()))]
    source = assemble(shared, (folder / f"{name}.lua").read_text())
    return Script(name, source, hashlib.sha1(source.encode()).hexdigest())


class _Scripts(dict[str, Script]):
    """The scripts by name, each read and assembled the first time it is sent."""

    def __missing__(self, name: str) -> Script:
        if name not in NAMES:
            raise KeyError(name)
        script = self[name] = _load(name)
        return script


SCRIPTS: dict[str, Script] = _Scripts()


def check_reply(reply: Any) -> Any:
    """Return ``reply``, or raise StoreRefused if it is a refusal ``[negative code, detail]``."""
    if isinstance(reply, list) and reply and isinstance(reply[0], int) and reply[0] < 0:
        code = reply[0]
        detail = wire.text(reply[1]) if len(reply) > 1 else ""
        if code == -1:
            raise StoreRefused(CODES[code], key=detail, code=code)
        if code == -3:
            raise StoreError(f"Redis refused the write: {detail}")
        if code == FENCED:
            token, fence = wire.ms(reply[2]), wire.text(reply[3])
            raise LeaseLost(detail, token, f"the type's fence is at {fence}")
        raise StoreRefused(f"{CODES.get(code, 'unknown refusal')}: {detail}", code=code)
    return reply


class _Deadlines:
    """Cuts short the calls that run past CALL_TIMEOUT_SECONDS.

    ``asyncio.timeout()`` sets and cancels a timer for every call, a measurable share of a
    round trip. This rounds each call's deadline up to a whole second of the
    loop's clock and keeps one timer per such second, which cancels the calls of that
    second still waiting. ``with deadlines.watch():`` around a call turns that cancellation
    into a TimeoutError, and lets any other cancellation through.
    """

    def __init__(self) -> None:
        self._cohorts: dict[int, set[asyncio.Task[Any]]] = {}
        self._expired: set[asyncio.Task[Any]] = set()

    def watch(self) -> _Watch:
        loop = asyncio.get_running_loop()
        second = int(loop.time() + CALL_TIMEOUT_SECONDS) + 1
        cohort = self._cohorts.get(second)
        if cohort is None:
            cohort = self._cohorts[second] = set()
            loop.call_at(second, self._expire, second)
        task = asyncio.current_task()
        assert task is not None
        cohort.add(task)
        return _Watch(self, second, task, task.cancelling())

    def _expire(self, second: int) -> None:
        for task in self._cohorts.pop(second, ()):
            self._expired.add(task)
            task.cancel()

    def _end(self, second: int, task: asyncio.Task[Any], cancelling: int) -> bool:
        """Stop watching. Whether the task was cancelled for its time and by nothing else
        since the call began (its cancellation is then taken back)."""
        cohort = self._cohorts.get(second)
        if cohort is not None:
            cohort.discard(task)
        if task not in self._expired:
            return False
        self._expired.discard(task)
        return task.uncancel() <= cancelling


class _Watch:
    __slots__ = ("_deadlines", "_second", "_task", "_cancelling")

    def __init__(
        self, deadlines: _Deadlines, second: int, task: asyncio.Task[Any], cancelling: int
    ) -> None:
        self._deadlines, self._second, self._task = deadlines, second, task
        self._cancelling = cancelling

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        ran_out = self._deadlines._end(self._second, self._task, self._cancelling)
        if ran_out and kind is asyncio.CancelledError:
            raise TimeoutError(f"no reply in {CALL_TIMEOUT_SECONDS} s") from None
        # Otherwise the call's own outcome stands: its result, its error, or a cancellation
        # that came from elsewhere (as asyncio.timeout() does).


def _pack(pack: Callable[..., Any] | None, conn: AbstractConnection, args: tuple[Any, ...]) -> Any:
    """The command's bytes. Text read from the store may hold bytes that are not UTF-8 (as
    lone surrogates: see duetime.stores.wire); it goes back as those very bytes."""
    try:
        return pack(args) if pack else conn.pack_command(*args)
    except UnicodeEncodeError:
        raw = tuple(wire.to_bytes(a) if isinstance(a, str) else a for a in args)
        return pack(raw) if pack else conn.pack_command(*raw)


class ScriptRunner:
    """Runs the scripts on one client's connection pool.

    With ``replicas`` (n, timeout ms), every script that writes is followed, on its
    connection and in the same round trip, by ``WAIT n timeout``: the call returns once n
    replicas have its writes, or raises StoreUnavailable.
    """

    def __init__(self, client: Redis, replicas: tuple[int, int] | None = None) -> None:
        self.client = client
        self._wait = None if replicas is None else ("WAIT", *replicas)
        self._pack: Callable[..., Any] | None = _hiredis_pack
        # Connections taken from the pool and kept between calls, one per call in flight
        # at the busiest moment. The client's aclose() disconnects them with the pool's.
        self._idle: list[AbstractConnection] = []
        self._deadlines = _Deadlines()

    async def _send(self, *args: Any, wait: tuple[Any, ...] | None = None) -> Any:
        pool = self.client.connection_pool
        for attempt in range(SEND_TRIES):
            conn = None
            try:
                # One deadline for the whole call; the client has no socket timeout, because
                # redis-py then wraps every send in asyncio.wait_for, a task per command.
                with self._deadlines.watch():
                    if self._idle:
                        conn = self._idle.pop()
                    else:
                        conn = await pool.get_connection()  # type: ignore[no-untyped-call]
                    if wait is None:  # the call's bytes, then its reply
                        packed = _pack(self._pack, conn, args)
                        await conn.send_packed_command(packed, check_health=False)
                        return await conn.read_response()
                    return await self._send_replicated(conn, args, wait)
            except (rexc.ConnectionError, rexc.TimeoutError, OSError, RuntimeError) as exc:
                # RuntimeError: uvloop's "unable to perform operation on <TCPTransport
                # closed=True>" when a connection is reset as it is being set up.
                if conn is not None:
                    await conn.disconnect()
                if attempt == SEND_TRIES - 1:
                    if isinstance(exc, RuntimeError):
                        raise rexc.ConnectionError(str(exc)) from exc
                    raise
            except (rexc.ResponseError, StoreUnavailable):
                raise
            except BaseException:
                # Cancelled (or worse) between sending and reading: the reply is still on
                # its way, so the connection cannot be used again.
                if conn is not None:
                    await conn.disconnect()
                raise
            finally:
                if conn is not None:
                    # A disconnected one connects again on its next send.
                    self._idle.append(conn)
            await asyncio.sleep(backoff_delay(attempt + 1, RETRY_FIRST_SECONDS, RETRY_CAP_SECONDS))
        raise AssertionError("unreachable")  # pragma: no cover

    async def _send_replicated(
        self, conn: AbstractConnection, args: tuple[Any, ...], wait: tuple[Any, ...]
    ) -> Any:
        """The call and its WAIT in one send; the call's reply once the replicas have it."""
        packed = _joined(_pack(self._pack, conn, args), _pack(self._pack, conn, wait))
        await conn.send_packed_command(packed, check_health=False)
        return await _replicated(conn, wait)

    async def run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """Run a script by SHA, loading it first if the server does not know it."""
        script = SCRIPTS[name]
        wait = None if name in READ_ONLY else self._wait
        try:
            reply = await self._send("EVALSHA", script.sha, len(keys), *keys, *args, wait=wait)
        except rexc.NoScriptError:
            # After a restart, a SCRIPT FLUSH or a failover the server forgets scripts.
            await self._send("SCRIPT", "LOAD", script.source)
            reply = await self._send("EVALSHA", script.sha, len(keys), *keys, *args, wait=wait)
        return check_reply(reply)


def _joined(first: Any, second: Any) -> Any:
    """Two packed commands as one send (hiredis packs bytes, redis-py a list of parts)."""
    if isinstance(first, bytes) and isinstance(second, bytes):
        return first + second
    parts = [first] if isinstance(first, bytes) else list(first)
    return parts + ([second] if isinstance(second, bytes) else list(second))


async def _replicated(conn: AbstractConnection, wait: tuple[Any, ...]) -> Any:
    """The reply of a command sent with ``WAIT n timeout`` after it; raises StoreUnavailable
    when fewer than n replicas acknowledged its writes in time."""
    try:
        reply = await conn.read_response()
    except rexc.ResponseError:
        # WAIT's own reply, sent with the command: read so that the connection can be used
        # again, and not raised (the command's error is the one that says what happened).
        with contextlib.suppress(rexc.ResponseError):
            await conn.read_response()
        raise
    acked = await conn.read_response()
    if not isinstance(acked, int) or acked < wait[1]:
        raise StoreUnavailable(
            f"no replica acknowledged the write within {wait[2]} ms (it may be on the "
            "primary alone, and lost if the primary is): durability='replicated'"
        )
    return reply
