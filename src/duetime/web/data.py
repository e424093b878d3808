"""What the dashboard shows, read from the App and its store: nothing here renders HTML, and
nothing writes (the writes are :mod:`.actions`)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from duetime.admin.discover import (
    INVALID_WARNING,
    Found,
    StoreView,
    find_types,
    is_valid,
    shown,
    split_names,
)
from duetime.app import App
from duetime.errors import NotFound
from duetime.features.cron.manage import CronInfo
from duetime.features.history.runs import RunInfo
from duetime.features.telemetry import TypeHistory, WorkerInfo
from duetime.model import TaskInfo
from duetime.stores.base import State
from duetime.triggers.poll import tick_type

log = logging.getLogger(__name__)

#: Tasks on one page of a listing.
PAGE_SIZE = 50


#: How long the list of types the store holds is reused: finding them scans the store.
STORED_TYPES_SECONDS = 5.0


class TypeNames:
    """The task types one dashboard shows, and the app to call about each, with the store's
    list of types kept a few seconds (one per dashboard: nothing is shared between apps).

    Nothing is declared on the App: a type it does not know is read through a
    :class:`~duetime.admin.discover.StoreView`, and only a type the App or the store knows is
    shown, so that no request can make the App accept a type or grow the overview.
    """

    def __init__(self, app: App) -> None:
        self.app = app
        self.view = StoreView(app)
        self._read_at = -STORED_TYPES_SECONDS
        self._stored = Found([], [])
        #: The names of the last call, and those found not valid (named on the overview).
        self._shown: frozenset[str] = frozenset()
        self.invalid: list[str] = []
        self._warned: set[str] = set()  # each invalid name is logged once

    async def __call__(self, workers: list[WorkerInfo], history: dict[str, Any]) -> list[str]:
        """Every task type worth a row: the App's, those live workers run, those with
        recent counts, and those the store holds tasks of; duetime's own types left out,
        and names that are not valid type names set apart in :attr:`invalid`."""
        if time.monotonic() - self._read_at > STORED_TYPES_SECONDS:
            self._stored = await find_types(self.app)
            self._read_at = time.monotonic()
        seen = {t for w in workers for t in w.types} | set(history)
        found = split_names(shown([*self.app.types, *seen, *self._stored.names]))
        self.invalid = sorted({*found.invalid, *self._stored.invalid})
        self._shown = frozenset(found.names)
        for name in set(self.invalid).difference(self._warned):
            log.warning(INVALID_WARNING, name)
            self._warned.add(name)
        return found.names

    async def shows(self, name: str) -> bool:
        """Whether ``name`` is a type this dashboard shows: one the App knows, one the
        store holds, or one live workers or the last hour name."""
        if name in self.app.types or name in self._shown:
            return True
        if not is_valid(name):
            return False
        if await self.view.holds(name):
            return True
        return name in await self(await self.app.workers(), await self.app.recent(60))

    async def client(self, name: str) -> App:
        """The app to call about ``name``: the App, or the view's for a type it does not
        know. Raises NotShown when this dashboard does not show ``name``."""
        if not await self.shows(name):
            raise NotShown(name)
        return await self.view.client(name)


class NotShown(NotFound):
    """A task type neither the App nor its store knows."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no task type {name!r}, in the app or in its store")
        self.name = name


@dataclass(frozen=True, slots=True)
class TypeRow:
    """One type on the overview."""

    name: str
    due: int
    running: int
    dead: int
    history: TypeHistory | None
    #: Paused on every worker (``app.pause``).
    paused: bool = False

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
    #: Names in the store that are not valid type names, skipped.
    invalid: list[str]


async def counts(type_names: TypeNames, names: list[str]) -> list[dict[State, int]]:
    """How many tasks of each of ``names`` are due, running and dead."""

    async def count(name: str) -> dict[State, int]:
        return await (await type_names.view.client(name)).counts(name)

    return list(await asyncio.gather(*(count(n) for n in names)))


async def overview(app: App, type_names: TypeNames) -> Overview:
    workers, history, paused = await asyncio.gather(app.workers(), app.recent(60), app.paused())
    names = await type_names(workers, history)
    by_type = await counts(type_names, names)
    rows = [
        TypeRow(name, c["due"], c["running"], c["dead"], history.get(name), name in paused)
        for name, c in zip(names, by_type, strict=True)
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
    return Overview(rows, workers, minutes, throughput, lateness, type_names.invalid)


@dataclass(frozen=True, slots=True)
class Listing:
    """One page of a type's tasks in one state."""

    task_type: str
    state: State
    counts: dict[State, int]
    tasks: list[TaskInfo]
    page: int
    pages: int
    #: Paused on every worker (``app.pause``): its due tasks wait for a resume.
    paused: bool = False


async def listing(type_names: TypeNames, name: str, state: State, page: int) -> Listing:
    """One page of ``name``'s tasks in ``state``.

    Raises:
        NotShown: neither the App nor the store knows ``name``.
    """
    client = await type_names.client(name)
    by_state = await client.counts(name)
    pages = max(1, -(-by_state[state] // PAGE_SIZE))
    page = min(max(page, 1), pages)
    tasks = await client.list(name, state, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
    paused = name in await client.paused()
    return Listing(name, state, by_state, tasks, page, pages, paused)


async def task(type_names: TypeNames, name: str, task_id: str) -> TaskInfo | None:
    """The task, or None (also for a type neither the App nor the store knows)."""
    if not await type_names.shows(name):
        return None
    return await (await type_names.view.client(name)).get(name, task_id)


#: Runs a type's or a task's page shows, the newest.
RUNS_SHOWN = 20
#: Runs of a cron schedule its row shows, and how many of its type's it looks among.
CRON_RUNS_SHOWN = 5
CRON_RUNS_READ = 200


async def runs(type_names: TypeNames, name: str, task_id: str | None = None) -> list[RunInfo]:
    """The newest runs of ``name`` (of ``task_id``, if given) the run history keeps; none for
    a type neither the App nor the store knows."""
    if not await type_names.shows(name):
        return []
    client = await type_names.view.client(name)
    return await client.history(name, task_id, limit=RUNS_SHOWN)


@dataclass(frozen=True, slots=True)
class DeadType:
    name: str
    count: int
    first: list[TaskInfo]


async def dead_letters(app: App, type_names: TypeNames) -> list[DeadType]:
    """Every type with dead tasks: how many, and the first few."""
    found = []
    for name in await type_names(await app.workers(), {}):
        client = await type_names.view.client(name)
        count = (await client.counts(name))["dead"]
        if count:
            found.append(DeadType(name, count, await client.list(name, "dead", limit=10)))
    return found


@dataclass(frozen=True, slots=True)
class CronRow:
    info: CronInfo
    next_runs: list[datetime]
    #: The schedule's last runs (its ticks, run in place or handed off), newest first.
    runs: list[RunInfo]


async def crons(app: App, type_names: TypeNames) -> list[CronRow]:
    rows = []
    for info in await app.crons():
        upcoming = [] if info.paused else await app.next_runs(info.name, 3)
        rows.append(CronRow(info, upcoming, await cron_runs(type_names, info)))
    return rows


async def cron_runs(type_names: TypeNames, info: CronInfo) -> list[RunInfo]:
    """The last runs of a schedule: those of its type whose id is its name, or one of its
    ticks handed off (``"<name>@<tick ms>"``), among the type's newest."""
    if not await type_names.shows(info.task_type):
        return []
    client = await type_names.view.client(info.task_type)
    found = await client.history(info.task_type, limit=CRON_RUNS_READ)
    mine = [r for r in found if r.task_id == info.name or r.task_id.startswith(info.name + "@")]
    return mine[:CRON_RUNS_SHOWN]


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


async def pollers(app: App, type_names: TypeNames) -> list[PollerRow]:
    """The App's pollers (registered in code: a dashboard started with ``--url`` has none)."""
    history = await app.recent(60)
    rows = []
    for name, poller in sorted(app.pollers.by_name.items()):
        tick = await app.get(tick_type(name), name)
        handler = poller.handler_type.name if poller.handler_type is not None else name
        store = await (await type_names.view.client(handler)).open()
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
    history = await app.recent(60)
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
