"""Claims of a partitioned type, and what carries their tokens: a claim asks every
partition at once, the batch spread over them from a partition that turns with each claim,
and the fencing tokens it hands out carry their partition (``token * MAX_PARTITIONS +
partition``), so that the settles, renewals and abort checks that carry them go back to it.
A type's gate is shared out over its partitions (:meth:`~duetime.stores.gating.Gate.share`).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from duetime.partitions.layout import part_name
from duetime.stores.base import Claim, ClaimBatch, Outcome, Store
from duetime.stores.capabilities import GATES, RUN_HISTORY, use
from duetime.stores.gating import Gate
from duetime.stores.runs import RunLog
from duetime.validate import MAX_PARTITIONS

T = TypeVar("T")


class _Partitioned(Protocol):
    """What the lease calls use of the partitioned store."""

    inner: Store
    _turn: itertools.count[int]
    _counts: dict[str, int]

    def _partitions_of(self, task_type: str) -> int: ...

    async def _n(self, task_type: str) -> int: ...

    async def _each(self, task_type: str, n: int, call: Callable[[str], Any]) -> list[Any]: ...


class PartitionLeases:
    """The calls of a :class:`~duetime.partitions.store.PartitionedStore` that hand out
    claims or carry their tokens."""

    async def claim(
        self: _Partitioned,
        task_type: str,
        *,
        now_ms: int,
        limit: int,
        gate: Gate | None = None,
        **options: Any,
    ) -> ClaimBatch:
        n = self._counts.get(task_type) or await self._n(task_type)
        if n == 1:
            return await self.inner.claim(
                task_type, now_ms=now_ms, limit=limit, gate=gate, **options
            )
        first = next(self._turn) % n
        shares = [limit // n + (1 if (p - first) % n < limit % n else 0) for p in range(n)]
        batches = await asyncio.gather(
            *(
                self.inner.claim(
                    part_name(task_type, p),
                    now_ms=now_ms,
                    limit=shares[p],
                    gate=None if gate is None else gate.share(p, n),
                    **options,
                )
                for p in range(n)
            )
        )
        claims = [
            c._replace(token=c.token * MAX_PARTITIONS + p)
            for step in range(n)
            for p in [(first + step) % n]
            for c in batches[p].claims
        ]
        nexts = [b.next_ms for b in batches if b.next_ms is not None]
        opens = [b.open_ms for b in batches if b.open_ms is not None]
        return ClaimBatch(
            claims,
            min(nexts, default=None),
            sum(b.reaped for b in batches),
            min(opens, default=None),
        )

    async def settle(
        self: _Partitioned,
        task_type: str,
        outcomes: Sequence[Outcome],
        now_ms: int,
        record: RunLog | None = None,
    ) -> list[bool]:
        """Settle each partition's outcomes there; with ``record`` (the inner store has the
        run history), each partition keeps the runs of its tasks."""
        settle = self.inner.settle if record is None else _recorded(self.inner, record)
        n = self._partitions_of(task_type)
        if n == 1:
            return await settle(task_type, outcomes, now_ms)
        kept = [False] * len(outcomes)
        groups = _by_token(outcomes, lambda o: o.claim)
        for p, group in groups.items():
            inner = [o._replace(claim=_inner(o.claim)) for _, o in group]
            got = await settle(part_name(task_type, p), inner, now_ms)
            for (place, _), ok in zip(group, got, strict=True):
                kept[place] = ok
        # A hold is the whole type's: its settle held its own partition, atomically with the
        # hand-back; the others get it right after (a claim between the two may start one).
        holds = [o.due_ms for o, ok in zip(outcomes, kept, strict=True) if ok and o.op == "hold"]
        if holds:
            until = max(h for h in holds if h is not None)
            await self._each(task_type, n, lambda part: use(self.inner, GATES).hold(part, until))
        return kept

    async def extend(
        self: _Partitioned, task_type: str, claims: Sequence[Claim], deadline_ms: int
    ) -> list[Claim]:
        if self._partitions_of(task_type) == 1:
            return await self.inner.extend(task_type, claims, deadline_ms)
        lost: list[Claim] = []
        for p, group in _by_token(claims, lambda c: c).items():
            inner = [_inner(c) for _, c in group]
            part = part_name(task_type, p)
            gone = {c.token for c in await self.inner.extend(part, inner, deadline_ms)}
            lost += (c for _, c in group if _inner(c).token in gone)
        return lost

    async def aborting(self: _Partitioned, task_type: str, claims: Sequence[Claim]) -> list[Claim]:
        if self._partitions_of(task_type) == 1:
            return await self.inner.aborting(task_type, claims)
        marked: list[Claim] = []
        for p, group in _by_token(claims, lambda c: c).items():
            inner = [_inner(c) for _, c in group]
            found = {c.token for c in await self.inner.aborting(part_name(task_type, p), inner)}
            marked += (c for _, c in group if _inner(c).token in found)
        return marked


def _inner(claim: Claim) -> Claim:
    """The claim as its partition handed it out."""
    return claim._replace(token=claim.token // MAX_PARTITIONS)


def _by_token(items: Sequence[T], claim_of: Callable[[T], Claim]) -> dict[int, list[tuple[int, T]]]:
    groups: dict[int, list[tuple[int, T]]] = {}
    for place, item in enumerate(items):
        groups.setdefault(claim_of(item).token % MAX_PARTITIONS, []).append((place, item))
    return groups


def _recorded(inner: Store, record: RunLog) -> Callable[..., Any]:
    """``inner``'s settle with ``record`` (the store has the run history)."""
    settle = use(inner, RUN_HISTORY).settle

    async def recorded(task_type: str, outcomes: Sequence[Outcome], now_ms: int) -> Any:
        return await settle(task_type, outcomes, now_ms, record)

    return recorded
