"""The Lua scripts of the Redis store: loaded from ``lua/*.lua``, run by SHA, reloaded on NOSCRIPT.

Each script opens with a header giving its KEYS, ARGV, reply and error codes. Scripts
report refusals as a reply ``[code, detail]`` with a negative code, before writing
anything; :func:`check_reply` turns those into :class:`~duetime.errors.StoreRefused`, or,
for a write under a lease that was lost, :class:`~duetime.errors.LeaseLost`.

Scripts are sent on the hot paths (schedule, claim, settle): :class:`ScriptRunner` sends
them through duetime's own client (:mod:`.resp`), which packs the command in C (hiredis)
and costs about half of redis-py's CPU a round trip (docs/performance.md). Every script
gives the same result when run twice, so a call that met a dropped connection is sent
again; on Redis Cluster, :class:`.cluster.ClusterScriptRunner` sends them.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, NamedTuple

from duetime.errors import LeaseLost, StoreError, StoreRefused, StoreUnavailable
from duetime.stores import wire
from duetime.stores.packaged import folder as package_folder
from duetime.stores.redis.assemble import assemble
from duetime.stores.redis.resp.client import RespClient, pack_args
from duetime.stores.redis.resp.errors import ReplyError

_PREAMBLE = "_preamble.lua"
#: A script's line naming the shared files beyond the preamble that it uses, put after the
#: preamble in that order (each script takes only the definitions it uses:
#: :mod:`.assemble`), as the SQL files' ``-- include`` lines.
_INCLUDE = re.compile(r"^-- include ((?:_\w+\.lua ?)+)$", re.M)
#: What a script's header says of its arguments: ``KEYS[n]``, ``ARGV[n]``, ``ARGV[n..]``
#: (from n on, as many as the call has) and ``ARGV[n..m]``.
_ARGUMENT = re.compile(r"\b(KEYS|ARGV)\[(\d+|i)( \+ i|\.\.(\d*))?\]")
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


class Script(NamedTuple):
    name: str
    source: str
    sha: str


class Arity(NamedTuple):
    """The KEYS and ARGV a script's header declares: from ``keys[0]`` to ``keys[1]`` keys
    and from ``argv[0]`` to ``argv[1]`` arguments (None: any number from the first on, the
    header's ``KEYS[i]``, ``KEYS[n..]``, ``KEYS[n + i]``, ``ARGV[n..]``; a ``KEYS[n]`` or
    ``ARGV[n]`` on a line that says "optional" may be left out, and ``ARGV[n..m]`` is n to
    m; the first mention of each declares it, later ones refer to it)."""

    keys: tuple[int, int | None]
    argv: tuple[int, int | None]


def includes(own: str) -> tuple[str, ...]:
    """The shared files a script's own text names on its ``-- include`` line."""
    found = _INCLUDE.search(own)
    return () if found is None else tuple(found.group(1).split())


def header(own: str) -> str:
    """A script's header: the comment lines it opens with."""
    lines = own.split("\n")
    end = next((i for i, line in enumerate(lines) if not line.startswith("--")), len(lines))
    return "\n".join(lines[:end])


def arity(own: str) -> Arity:
    """The KEYS and ARGV the header of a script's own text declares."""
    bounds: dict[str, list[int | None]] = {"KEYS": [0, 0], "ARGV": [0, 0]}
    declared: set[tuple[str, str, str]] = set()
    for line in header(own).split("\n"):
        optional = "optional" in line
        for kind, first, dots, last in _ARGUMENT.findall(line):
            if (kind, first, dots) in declared:  # named again further on: a reference
                continue
            declared.add((kind, first, dots))
            low, high = bounds[kind]
            if first == "i":  # any number of them
                bounds[kind] = [low, None]
                continue
            n = int(first)
            if dots.startswith(" +"):  # n + i: n, then one for each of the call's items
                bounds[kind] = [max(low or 0, n), None]
            elif dots and not last:  # from n on: n - 1 at least
                bounds[kind] = [max(low or 0, n - 1), None]
            else:
                top = int(last) if last else n
                least = low if optional or dots else max(low or 0, n)
                bounds[kind] = [least, None if high is None else max(high, top)]
    keys, argv = bounds["KEYS"], bounds["ARGV"]
    return Arity((keys[0] or 0, keys[1]), (argv[0] or 0, argv[1]))


def own_text(name: str) -> str:
    """A script's own file, as written."""
    return (package_folder("duetime.stores.redis", "lua") / f"{name}.lua").read_text()


def _load(name: str) -> Script:
    folder = package_folder("duetime.stores.redis", "lua")
    own = own_text(name)
    shared = [(folder / part).read_text() for part in (_PREAMBLE, *includes(own))]
    source = assemble(shared, own)
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


class ScriptRunner:
    """Runs the scripts on duetime's own client, by SHA, loading a script the server does
    not know (after a restart, a SCRIPT FLUSH or a failover) and sending it again.

    With ``replicas`` (n, timeout ms), every script that writes is followed, on its
    connection and in the same round trip, by ``WAIT n timeout``: the call returns once n
    replicas have its writes, or raises StoreUnavailable.
    """

    def __init__(self, link: RespClient, replicas: tuple[int, int] | None = None) -> None:
        self.link = link
        self._wait = None if replicas is None else ("WAIT", *replicas)

    async def run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """The script's reply (:func:`check_reply`).

        Raises:
            ReplyError: the server's error (out of memory, say); ConnectionLost and
            TimeoutError: no reply after the client's tries; StoreRefused, LeaseLost,
            StoreError: the script refused; StoreUnavailable: the replicas did not
            acknowledge in time.
        """
        script = SCRIPTS[name]
        wait = None if name in READ_ONLY else self._wait
        call = ("EVALSHA", script.sha, len(keys), *keys, *args)
        reply = await self._send(call, wait)
        if isinstance(reply, ReplyError) and reply.code == "NOSCRIPT":
            await self.link.call("SCRIPT", "LOAD", script.source)
            reply = await self._send(call, wait)
        if isinstance(reply, ReplyError):
            raise reply
        return check_reply(reply)

    async def _send(self, call: tuple[Any, ...], wait: tuple[Any, ...] | None) -> Any:
        """The call's reply, an error reply as a value; with ``wait``, once the replicas
        have its writes."""
        if wait is None:
            return await self.link.send(pack_args(call), 1)
        reply, acked = await self.link.call_many((call, wait))
        if not isinstance(reply, ReplyError):
            check_acknowledged(acked, (wait[1], wait[2]))
        return reply


def check_acknowledged(acked: Any, replicas: tuple[int, int]) -> None:
    """Raise StoreUnavailable unless ``acked``, WAIT's reply, counts the replicas asked for
    (``replicas``: n, timeout ms)."""
    if not isinstance(acked, int) or acked < replicas[0]:
        raise StoreUnavailable(
            f"no replica acknowledged the write within {replicas[1]} ms (it may be on the "
            "primary alone, and lost if the primary is): durability='replicated'"
        )
