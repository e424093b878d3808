"""What the dashboard shows, read from the App and its store: nothing here renders HTML, and
nothing writes (the writes are :mod:`.actions`)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from duetime.admin.discover import INTERNAL_PREFIX, SHOWN_INTERNAL, adopt, stored_types
from duetime.app import App
from duetime.features.cron.manage import CronInfo
from duetime.features.telemetry import TypeHistory, WorkerInfo
from duetime.model import TaskInfo
from duetime.stores.base import State
from duetime.triggers.poll import tick_type

#: Tasks on one page of a listing.
PAGE_SIZE = 50


async def known(app: App, name: str) -> None:
    """Make ``name`` a type the App knows, with the partitions the store holds it in, so
    that a dashboard without the user's code (``--url``) reads and acts on any type."""
    await adopt(app, name)


#: How long the list of types the store holds is reused: finding them scans the store.
STORED_TYPES_SECONDS = 5.0


class TypeNames:
    """The task types one dashboard shows, with the store's list of types kept a few
    seconds (one per dashboard: nothing is shared between apps)."""

    def __init__(self, app: App) -> None:
        self.app = app
        self._read_at = -STORED_TYPES_SECONDS
        self._stored: list[str] = []

    async def __call__(self, workers: list[WorkerInfo], history: dict[str, Any]) -> list[str]:
        """Every task type worth a row: the App's, those live workers run, those with
        recent counts, and those the store holds tasks of; duetime's own types left out."""
        app = self.app
        names = set(app.types) | {t for w in workers for t in w.types} | set(history)
        names = {n for n in names if not n.startswith(INTERNAL_PREFIX) or n in SHOWN_INTERNAL}
        if time.monotonic() - self._read_at > STORED_TYPES_SECONDS:
            self._stored = await stored_types(app)
            self._read_at = time.monotonic()
        await adopt(app, *names, *self._stored)
        return sorted(names.union(self._stored))


@dataclass(frozen=True, slots=True)
class TypeRow:
    """One type on the overview."""

    name: str
    due: int
    running: int
    dead: int
    history: TypeHistory | None

    @property
    def fired(self) -> int:
        return 0 if self.history is None else self.history.total("fired")

    @property
    def failed(self) -> int:
        return 0 if self.history is None else self.history.total("failed")

    @property
    def p99_ms(self) -> float | None:
        return None if self.history is None else self.history.lateness_quantile(0.99)


@dataclass(frozen=True, slots=True)
class Overview:
    rows: list[TypeRow]
    workers: list[WorkerInfo]
    #: One series per chart: minute starts (epoch s), and per type the values.
    minutes: list[int]
    throughput: dict[str, list[int]]
    lateness_p99: dict[str, list[float | None]]


async def overview(app: App, type_names: TypeNames) -> Overview:
    workers, history = await asyncio.gather(app.workers(), app.history(60))
    names = await type_names(workers, history)
    counts = await asyncio.gather(*(app.counts(n) for n in names))
    rows = [
        TypeRow(name, c["due"], c["running"], c["dead"], history.get(name))
        for name, c in zip(names, counts, strict=True)
    ]
    any_history = next(iter(history.values()), None)
    minutes = (
        [int(m.minute.timestamp()) for m in any_history.minutes] if any_history is not None else []
    )
    throughput = {n: [m.fired for m in h.minutes] for n, h in history.items() if n in names}
    lateness = {
        n: [TypeHistory(n, [m]).lateness_quantile(0.99) for m in h.minutes]
        for n, h in history.items()
        if n in names
    }
    return Overview(rows, workers, minutes, throughput, lateness)


@dataclass(frozen=True, slots=True)
class Listing:
    """One page of a type's tasks in one state."""

    task_type: str
    state: State
    counts: dict[State, int]
    tasks: list[TaskInfo]
    page: int
    pages: int


async def listing(app: App, name: str, state: State, page: int) -> Listing:
    await known(app, name)
    counts = await app.counts(name)
    pages = max(1, -(-counts[state] // PAGE_SIZE))
    page = min(max(page, 1), pages)
    tasks = await app.list(name, state, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
    return Listing(name, state, counts, tasks, page, pages)


async def task(app: App, name: str, task_id: str) -> TaskInfo | None:
    await known(app, name)
    return await app.get(name, task_id)


@dataclass(frozen=True, slots=True)
class DeadType:
    name: str
    count: int
    first: list[TaskInfo]


async def dead_letters(app: App, type_names: TypeNames) -> list[DeadType]:
    """Every type with dead tasks: how many, and the first few."""
    found = []
    for name in await type_names(await app.workers(), {}):
        count = (await app.counts(name))["dead"]
        if count:
            found.append(DeadType(name, count, await app.list(name, "dead", limit=10)))
    return found


@dataclass(frozen=True, slots=True)
class CronRow:
    info: CronInfo
    next_runs: list[datetime]


async def crons(app: App) -> list[CronRow]:
    rows = []
    for info in await app.crons():
        upcoming = [] if info.paused else await app.next_runs(info.name, 3)
        rows.append(CronRow(info, upcoming))
    return rows


@dataclass(frozen=True, slots=True)
class PollerRow:
    name: str
    concurrency: int
    next_call: datetime | None
    calling: bool
    #: Calls in a row that dispatched nothing.
    idle_calls: int
    active: list[str]
    calls_last_hour: int
    errors_last_hour: int
    last_call_minute: datetime | None


async def pollers(app: App) -> list[PollerRow]:
    """The App's pollers (registered in code: a dashboard started with ``--url`` has none)."""
    history = await app.history(60)
    store = await app.open()
    rows = []
    for name, poller in sorted(app.pollers.by_name.items()):
        tick = await app.get(tick_type(name), name)
        handler = poller.handler_type.name if poller.handler_type is not None else name
        await known(app, handler)
        active = await store.active_ids(handler, poller.settings.concurrency)
        calls = history.get(tick_type(name))
        last = None
        if calls is not None:
            last = next((m.minute for m in reversed(calls.minutes) if m.fired), None)
        attempt = (tick.payload or {}).get("attempt", 0) if tick is not None else 0
        rows.append(
            PollerRow(
                name=name,
                concurrency=poller.settings.concurrency,
                next_call=None if tick is None or tick.state == "running" else tick.due,
                calling=tick is not None and tick.state == "running",
                idle_calls=attempt if isinstance(attempt, int) else 0,
                active=active,
                calls_last_hour=0 if calls is None else calls.total("fired"),
                errors_last_hour=0 if calls is None else calls.total("failed"),
                last_call_minute=last,
            )
        )
    return rows


@dataclass(frozen=True, slots=True)
class GroupRow:
    name: str
    ttl_s: float
    counts: dict[State, int]
    soonest: list[TaskInfo]
    expired_last_hour: int


async def expiring_groups(app: App) -> list[GroupRow]:
    history = await app.history(60)
    rows = []
    for name, group in sorted(app.expiring_groups.items()):
        h = history.get(name)
        rows.append(
            GroupRow(
                name,
                group.ttl_ms / 1000,
                await app.counts(name),
                await app.list(name, "due", limit=10),
                0 if h is None else h.total("fired"),
            )
        )
    return rows
