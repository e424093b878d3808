"""Keys other programs write, expiring: ``on_key_expired`` and ``key_timer`` handlers.

Redis publishes the name of each key that expires (keyspace notifications). Every worker
with such handlers listens; each event becomes one task of the handler's type, whichever
worker heard it first (``Store.schedule_event``), and runs like any task, with its retries.
The events themselves are at most once: one published while no worker listens is gone, and
Redis publishes a key's expiry only when it removes the key, which may be seconds late.

A key timer is a key named ``<id>:??<name>??<JSON>`` (the layout of a Redis key-name timer
scheduler whose producers duetime keeps working): ``<name>`` is looked up among the
handlers registered with ``key_timer``, and the JSON is the message they are given. A name
with no handler, or a key that does not parse, is never imported or evaluated: it is filed
in the dead letters of :data:`UNROUTED`, with the reason.

The task of an expiry is ``"<key>@<ms heard>"``, an occurrence id; a key name may be of any
length and hold any bytes, so one that would not make an id every call takes is named by
its start and a hash instead (:func:`event_id`). The handler is given the whole key.
"""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import json
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from duetime.clock import Clock
from duetime.errors import Abort, ValidationError
from duetime.record import Record
from duetime.stores import wire
from duetime.stores.base import NewTask
from duetime.stores.capabilities import KeyEvents as KeyEventSource
from duetime.validate import MAX_ID_BYTES, check_id, dump_json

log = logging.getLogger(__name__)

#: The task type whose dead letters hold key timers that name no handler or do not parse.
UNROUTED = "duetime.keyTimers"
#: The separator of a key timer's parts: ``<id>:??<name>??<JSON>``.
TIMER_MARK = ":??"
#: Every worker hears an expiry: one of them turns it into a task, and the others find the
#: event remembered for this long. Two expiries of one key within it count as one.
EXPIRED_WINDOW_MS = 5_000
#: A key timer's name is unique (it starts with a random id): remembered longer.
TIMER_WINDOW_MS = 3_600_000
#: Hex digits of a key's SHA-256 in the id of a key too long (or too odd) to be one: 64
#: bits, so that two such keys expiring in one millisecond do not share a task.
HASH_DIGITS = 16
_UNSAFE_IN_ID = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class KeyRoute:
    """Where the expiries of some keys of one database go.

    Attributes:
        kind: ``expired`` (keys matching ``pattern``) or ``timer`` (key timers naming
            ``name``).
        task_type: the handler's task type.
    """

    kind: Literal["expired", "timer"]
    db: int
    task_type: str
    pattern: str = ""
    name: str = ""


class KeyEvents:
    """Turns the key expiry events of some routes into tasks, once across workers."""

    def __init__(self, routes: Iterable[KeyRoute], store: KeyEventSource, clock: Clock) -> None:
        self.routes = list(routes)
        self.store = store
        self.clock = clock
        self._pending: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        """Listen to every database a route names, until cancelled."""
        dbs = sorted({route.db for route in self.routes})
        async with asyncio.TaskGroup() as group:
            for db in dbs:
                group.create_task(self.store.key_expiries(db, self._heard(db)))

    def _heard(self, db: int) -> Callable[[str], None]:
        """The callback of one database's events: each key is handled in a task of its own
        (the listener must not wait on the store)."""
        routes = [r for r in self.routes if r.db == db]

        def heard(key: str) -> None:
            task = asyncio.get_running_loop().create_task(self._handle(routes, key))
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)

        return heard

    async def _handle(self, routes: Sequence[KeyRoute], key: str) -> None:
        try:
            await self.handle(routes, key)
        except Exception:  # the store failed: the event is lost, as one nobody heard
            log.exception("the expiry of key %r could not be turned into a task", key)

    async def handle(self, routes: Sequence[KeyRoute], key: str) -> None:
        """The tasks one expired key makes."""
        now = self.clock.now_ms()
        for route in routes:
            if route.kind == "expired" and fnmatch.fnmatchcase(key, route.pattern):
                await self._task(route.task_type, key, now, {"key": key}, EXPIRED_WINDOW_MS)
        if TIMER_MARK not in key or not any(r.kind == "timer" for r in routes):
            return
        name, message, problem = parse_timer(key)
        timer = next((r for r in routes if r.kind == "timer" and r.name == name), None)
        if timer is not None and problem is None:
            payload = {"key": key, "message": message}
            await self._task(timer.task_type, key, now, payload, TIMER_WINDOW_MS)
            return
        reason = problem or f"no key_timer handler is named {name!r}"
        log.warning("key timer %r filed in the dead letters: %s", key, reason)
        await self._task(UNROUTED, key, now, {"key": key, "reason": reason}, TIMER_WINDOW_MS)

    async def _task(
        self, task_type: str, key: str, now: int, payload: dict[str, object], window: int
    ) -> None:
        record = Record(dump_json(payload)).encode()
        task = NewTask(event_id(key, now), now, record)
        await self.store.schedule_event(task_type, key, task, window_ms=window)


def event_id(key: str, now_ms: int) -> str:
    """The id of the task the expiry of ``key`` heard at ``now_ms`` makes: ``"<key>@<ms>"``
    when ``key`` is a valid task id (at most 200 bytes, no control characters), else
    ``"<start>~<hash>@<ms>"``: the key's start (control characters as ``?``) and 16 hex
    digits of its SHA-256, within 200 bytes. Either way ``get``, ``retry`` and ``cancel``
    take the id; the handler gets the whole key from the task's payload."""
    try:
        check_id(key, "key", stored=True)
        fits = len(wire.to_bytes(key)) <= MAX_ID_BYTES
    except ValidationError:
        fits = False
    if fits:
        return f"{key}@{now_ms}"
    digest = hashlib.sha256(wire.to_bytes(key)).hexdigest()[:HASH_DIGITS]
    room = MAX_ID_BYTES - 1 - HASH_DIGITS
    # Cut at a byte count, dropping a character cut in two and bytes that are not UTF-8.
    start = wire.to_bytes(_UNSAFE_IN_ID.sub("?", key))[:room].decode("utf-8", "ignore")
    return f"{start}~{digest}@{now_ms}"


def parse_timer(key: str) -> tuple[str, object, str | None]:
    """(name, message, problem) of a key timer ``<id>:??<name>??<JSON>``; ``problem`` says
    why it cannot be run, or is None."""
    _, _, rest = key.partition(TIMER_MARK)
    name, found, text = rest.partition("??")
    if not found or not name:
        return name, None, "the key is not '<id>:??<name>??<JSON>'"
    try:
        message = json.loads(text, parse_constant=_not_json)
    except (ValueError, RecursionError) as exc:
        return name, None, f"its message is not JSON: {exc}"
    return name, message, None


def _not_json(constant: str) -> object:
    raise ValueError(f"{constant} is not JSON")


async def file_unrouted(payload: dict[str, object]) -> None:
    """The handler of :data:`UNROUTED`: every such task goes to the dead letters at once."""
    raise Abort(str(payload.get("reason", "a key timer that cannot be run")))
