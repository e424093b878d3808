"""The worker's hot path on Redis: claim (reap, then lease), settle and lease renewal, a
script call a batch each (``claim_due.lua``, ``settle.lua``, ``extend_lease.lua``)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from typing import Any, Protocol

from duetime.stores import wire
from duetime.stores.base import Claim, ClaimBatch, Outcome, new_claim
from duetime.stores.gating import Gate
from duetime.stores.redis.codec import log_args, settle_ops
from duetime.stores.redis.keys import TypeKeys, call_id, call_key, finished_key
from duetime.stores.runs import RunLog

#: How long a claim's reply is kept for a resend of the call (the script runner resends
#: within a few seconds).
CLAIM_REPLAY_MS = 15_000
#: Most outcomes settled by one script call, so that one call never blocks the server long.
SETTLE_CHUNK = 500
#: How long a settle's reply is kept for a resend of the call, as a claim's is.
SETTLE_REPLAY_MS = CLAIM_REPLAY_MS


def claims_of(reply: list[Any]) -> list[Claim]:
    """The claims in a reply of claim_due.lua (``id, token, stalls, due, record, lead`` each,
    after the first three values): read inline as the replies come (ids and records as
    bytes, due times as digits), else value by value, whatever the bytes (:mod:`.wire`)."""
    new, decode, claim = tuple.__new__, bytes.decode, Claim
    try:
        return [
            new(
                claim,
                (
                    decode(reply[i], "utf-8", "surrogateescape"),
                    reply[i + 1],
                    reply[i + 2],
                    int(reply[i + 3]),
                    decode(reply[i + 4], "utf-8", "surrogateescape"),
                    reply[i + 5],
                ),
            )
            for i in range(3, len(reply), 6)
        ]
    except (TypeError, ValueError):  # a value of another kind: read each the long way
        text, ms = wire.text, wire.ms
        return [
            new_claim(
                text(reply[i]),
                reply[i + 1],
                reply[i + 2],
                ms(reply[i + 3]),
                text(reply[i + 4]),
                min(wire.count(reply[i + 5]), 999),
            )
            for i in range(3, len(reply), 6)
        ]


class _Core(Protocol):
    """What the hot path uses of the store."""

    _cluster: bool
    _claimed: set[str]
    _more_claimed: asyncio.Event

    def keys(self, task_type: str) -> TypeKeys: ...

    def _wake(self, task_type: str) -> str: ...

    async def _run(self, name: str, keys: list[str], args: list[Any]) -> Any: ...


class RedisLeases:
    """The Redis store's claims, settles and lease renewals, as a part of
    :class:`~.store.RedisStore`."""

    async def claim(
        self: _Core,
        task_type: str,
        *,
        now_ms: int,
        limit: int,
        lease_ms: int,
        max_stalls: int,
        at_most_once: bool,
        lookahead_ms: int = 0,
        gate: Gate | None = None,
        record: RunLog | None = None,
    ) -> ClaimBatch:
        k = self.keys(task_type)
        call = call_key(k, call_id())
        keys = [k.due, k.running, k.data, k.lease, k.meta, k.dead, k.seq, call, k.gate]
        keys += (k.order, k.lane, k.group, k.groups, k.ready, k.pace)
        mode = "1" if at_most_once else "0"
        args = [now_ms, limit, lease_ms, max_stalls, mode, lookahead_ms, CLAIM_REPLAY_MS]
        if gate is not None:
            args += (repr(gate.interval_ms), repr(gate.burst), gate.max_running)
            args += (repr(gate.group_interval_ms), repr(gate.group_burst), gate.group_running)
        if record is not None:  # the history after the gate's slots, taken or not
            if gate is None:
                args += (0, 1, 0, 0, 1, 0)
            keys += (k.runs, k.tally)
            args += log_args(record)
        reply = await self._run("claim_due", keys, args)
        if self._cluster and task_type not in self._claimed:  # a type to be woken for
            self._claimed.add(task_type)
            self._more_claimed.set()
        return ClaimBatch(
            claims_of(reply), wire.readable(reply[0]), reply[1], wire.readable(reply[2])
        )

    async def settle(
        self: _Core,
        task_type: str,
        outcomes: Sequence[Outcome],
        now_ms: int,
        record: RunLog | None = None,
    ) -> list[bool]:
        k = self.keys(task_type)
        kept: list[bool] = []
        head: list[Any] = [now_ms, self._wake(task_type), task_type, SETTLE_REPLAY_MS]
        if record is not None:  # the history and its tally are KEYS[14] and KEYS[15]
            head += ("log", 14, 15, *log_args(record))
        for start in range(0, len(outcomes), SETTLE_CHUNK):
            chunk = outcomes[start : start + SETTLE_CHUNK]
            # A call key of its own: a resend finds the reply of the first send, and does
            # not take the outcomes that send kept for lost leases. Then the type's gate,
            # the history's keys, the finished keys of tasks scheduled with unique_for.
            call = call_key(k, call_id())
            keys = [k.due, k.running, k.data, k.lease, k.meta, k.dead, call, k.gate]
            keys += (k.order, k.lane, k.group, k.groups, k.ready)
            if record is not None:
                keys += (k.runs, k.tally)
            finished = functools.partial(finished_key, k)
            ops, order = settle_ops(chunk, record is not None, now_ms, keys, finished)
            reply = await self._run("settle", keys, [*head, *ops])
            if order is None:  # the answers are in the outcomes' order
                kept += [answer == 1 for answer in reply]
                continue
            answers = dict(zip(map(id, order), reply, strict=True))
            kept += (answers[id(o)] == 1 for o in chunk)
        return kept

    async def extend(
        self: _Core, task_type: str, claims: Sequence[Claim], deadline_ms: int
    ) -> list[Claim]:
        if not claims:
            return []
        k = self.keys(task_type)
        args: list[Any] = [deadline_ms]
        for claim in claims:
            args += (claim.id, claim.token)
        reply = await self._run("extend_lease", [k.running, k.lease], args)
        lost = {wire.text(task_id) for task_id in reply}
        return [claim for claim in claims if claim.id in lost]
