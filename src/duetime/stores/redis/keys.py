"""Every Redis key and channel name duetime uses, built in one place.

All keys of one task type share the hash tag ``{<namespace>:<type>}``, so they live in one
Redis Cluster slot and one script may touch them all::

    duetime:{ns:type}:due       ZSET  id -> due time (ms)
    duetime:{ns:type}:running   ZSET  id -> lease deadline (ms)
    duetime:{ns:type}:lease     HASH  id -> "<token>|<due ms>" while running, and one
                                      sentinel field that keeps it a hash table
    duetime:{ns:type}:dead      ZSET  id -> time of death (ms)
    duetime:{ns:type}:data      HASH  id -> record (JSON: payload, every, until,
                                      occurrence, failures)
    duetime:{ns:type}:meta      HASH  s:<id> -> expired leases of the current occurrence,
                                      e:<id> -> the last error (only for tasks that
                                      stalled or failed)
    duetime:{ns:type}:seq       STRING  the last fencing token given out
    duetime:{ns:type}:fence     STRING  the type's fence: the highest token (of a claim
                                      of another type: a poller's call) that began
                                      writing to the type; writes under a lower are
                                      refused
    duetime:{ns:type}:abort     HASH  id -> the token of a run marked to abort (only
                                      while runs are being aborted)
    duetime:{ns:type}:gate      HASH  the type's gates, each field only while set:
                                      paused "1", hold <ms> (a handler's RateLimited),
                                      tat <ms> (its rate's GCRA time), wait "1" (a
                                      claim found it at its global concurrency)
    duetime:{ns:type}:runs      STREAM  the type's run history, oldest first: an entry
                                      per settle (and per failed run), its id counting
                                      the runs added (see the scripts' preamble)
    duetime:{ns:type}:tally     STRING  how many runs were ever added to runs (the id of
                                      its last entry); both expire when no run was
                                      added for the history's max age
    duetime:{ns:type}:lane      HASH  id -> priority, for tasks of a priority other than 0
    duetime:{ns:type}:order     ZSET  id -> priority band + due time: every due task, by
                                      priority then due time, once the type had a task of
                                      a priority other than 0 (see lua/_lanes.lua)
    duetime:{ns:type}:group     HASH  id -> group, for tasks of a group (see lua/_groups.lua)
    duetime:{ns:type}:groups    ZSET  all scores 0, by member: "<len>:<group>|<due hex>|<id>"
                                      for every due task (group "" for those of none), and
                                      "r|<len>:<group>|<id>" for the runs a grouped claim
                                      started, once the type had a task of a group
    duetime:{ns:type}:ready     ZSET  group -> when a grouped claim visits it next (turns)
    duetime:{ns:type}:pace      ZSET  group -> its group rate's time (GCRA); a grouped claim
                                      drops the times past

    duetime:{ns:type}:call:<id> STRING  for 15 s after a claim, its reply; for 60 s after a
                                      schedule of tasks due within a minute, a marker:
                                      a call resent after a lost reply is answered
                                      from these instead of being done twice

    duetime:{ns:type}:event:<key>  STRING  for a while after a key expiry event was turned
                                      into a task of the type: the workers that all heard
                                      the event make one task

    duetime:{ns:type}:finished:<id>  STRING  when a run of a task scheduled with unique_for
                                      finished (ms), for that window (it expires then)

    duetime:{ns}:crons          HASH  cron schedule name -> the task type it lives in
    duetime:{ns}:paused         SET   the types paused (an index for listings; the gate
                                      hash of each is what claims read)
    duetime:{ns}:workers        HASH  worker id -> its heartbeat record (JSON)
    duetime:{ns}:workers:until  ZSET  worker id -> when its record lapses (ms)
    duetime:{ns}:minute:<ms>    HASH  "<what>:<type>" -> count, for the minute starting
                                      at <ms>; expires an hour later

    duetime:{ns}:wake           pub/sub channel: "<type> <due ms>" when a task becomes
                                the earliest of its type, "<type> abort" when a run
                                of the type was marked to abort
    duetime:{ns:type}:wake      on Redis Cluster, the shard channel of the same, in the
                                slot of the type's keys (SPUBLISH / SSUBSCRIBE)
"""

from __future__ import annotations

import itertools
import os
from typing import NamedTuple

from duetime.stores import wire

PREFIX = "duetime"


class TypeKeys(NamedTuple):
    """The keys of one task type. (A NamedTuple, not a dataclass: it is made at import in
    a fifth of the time, a worker's start.)"""

    due: str
    running: str
    dead: str
    data: str
    lease: str
    meta: str
    seq: str
    fence: str
    abort: str
    gate: str
    runs: str
    tally: str
    lane: str
    order: str
    group: str
    groups: str
    ready: str
    pace: str


def type_keys(namespace: str, task_type: str) -> TypeKeys:
    """The keys of ``task_type`` in ``namespace``; both names are validated by the caller."""
    base = f"{PREFIX}:{{{namespace}:{task_type}}}:"
    return TypeKeys(*(base + kind for kind in TypeKeys._fields))


def call_key(keys: TypeKeys, call_id: str) -> str:
    """The key that remembers one script call, in the slot of its type's keys."""
    return keys.seq[: -len("seq")] + "call:" + call_id


def event_key(keys: TypeKeys, event: str) -> str:
    """The key that remembers, for a while, that an event was turned into a task of the
    type (so that the workers that all heard it make one task), in the type's slot."""
    return keys.seq[: -len("seq")] + "event:" + event


def finished_key(keys: TypeKeys, task_id: str) -> str:
    """The key that remembers, for a task scheduled with ``unique_for``, when its last run
    finished, in the type's slot."""
    return keys.seq[: -len("seq")] + "finished:" + task_id


def keyevent_channel(db: int) -> str:
    """The channel on which Redis publishes the names of the keys of ``db`` that expire."""
    return f"__keyevent@{db}__:expired"


def cron_index(namespace: str) -> str:
    """The hash of the namespace's cron schedule names and their task types."""
    return f"{PREFIX}:{{{namespace}}}:crons"


def paused_index(namespace: str) -> str:
    """The set of the namespace's paused types (for listings: claims read each type's gate)."""
    return f"{PREFIX}:{{{namespace}}}:paused"


def worker_keys(namespace: str) -> list[str]:
    """The hash of the namespace's worker records and the sorted set of when each lapses."""
    return [f"{PREFIX}:{{{namespace}}}:workers", f"{PREFIX}:{{{namespace}}}:workers:until"]


def minute_key(namespace: str, minute_ms: int) -> str:
    """The hash of the namespace's counts for the minute starting at ``minute_ms``."""
    return f"{PREFIX}:{{{namespace}}}:minute:{minute_ms}"


def wake_channel(namespace: str) -> str:
    """The pub/sub channel on which workers of ``namespace`` are woken."""
    return f"{PREFIX}:{{{namespace}}}:wake"


def shard_wake_channel(namespace: str, task_type: str) -> str:
    """The shard channel on which, on Redis Cluster, workers of ``task_type`` are woken: in
    the slot of the type's keys."""
    return f"{PREFIX}:{{{namespace}:{task_type}}}:wake"


def parse_lease(value: str) -> tuple[int, int]:
    """(token, due ms) of a lease value "<token>|<due ms>"; either is UNREADABLE_MS when the
    value is not of that form."""
    token, _, due = value.partition("|")
    return wire.ms(token), wire.ms(due)


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


def call_id() -> str:
    """A call id unique across processes: the process's random prefix and a counter (a
    system call for random bytes on every call would cost a few microseconds of it)."""
    return f"{_call_prefix}{next(_call_count):x}"
