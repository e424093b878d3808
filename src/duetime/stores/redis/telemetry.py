"""The Redis store's :class:`~duetime.stores.telemetry.Telemetry`: worker records in one
hash with a sorted set of when each lapses, and one hash of counts per minute that expires
an hour later; all in the namespace's slot, each call one script."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from duetime.stores import wire
from duetime.stores.redis.keys import minute_key, worker_keys
from duetime.stores.telemetry import KEEP_MINUTES, MINUTE_MS

#: Runs one of the store's scripts: (name, keys, args) -> reply.
Run = Callable[[str, list[str], list[Any]], Awaitable[Any]]
#: Between what was counted and the task type in a count's field.
_SEP = ":"


class RedisTelemetry:
    def __init__(self, namespace: str, run: Run) -> None:
        self._namespace = namespace
        self._run = run
        self._workers = worker_keys(namespace)

    async def beat(self, worker_id: str, record: str, until_ms: int, now_ms: int) -> None:
        await self._run("beat", self._workers, [worker_id, record, until_ms, now_ms])

    async def workers(self, now_ms: int) -> list[str]:
        return [wire.text(r) for r in await self._run("live_workers", self._workers, [now_ms])]

    async def add_counts(self, counts: Mapping[tuple[int, str, str], int], now_ms: int) -> None:
        by_minute: dict[int, list[Any]] = defaultdict(list)
        for (minute, task_type, what), n in counts.items():
            if minute > now_ms - KEEP_MINUTES * MINUTE_MS:
                by_minute[minute] += (what + _SEP + task_type, n)
        if not by_minute:
            return
        keys, args = [], [(KEEP_MINUTES + 1) * MINUTE_MS]
        for minute, fields in by_minute.items():
            keys.append(minute_key(self._namespace, minute))
            args += (minute, len(fields) // 2, *fields)
        await self._run("add_counts", keys, args)

    async def counts_since(self, since_ms: int) -> dict[tuple[int, str, str], int]:
        first = since_ms + (-since_ms) % MINUTE_MS
        minutes = list(range(first, first + (KEEP_MINUTES + 1) * MINUTE_MS, MINUTE_MS))
        keys = [minute_key(self._namespace, m) for m in minutes]
        found: dict[tuple[int, str, str], int] = {}
        for minute, flat in zip(minutes, await self._run("read_counts", keys, []), strict=True):
            for i in range(0, len(flat), 2):
                what, _, task_type = wire.text(flat[i]).partition(_SEP)
                found[minute, task_type, what] = int(flat[i + 1])
        return found
