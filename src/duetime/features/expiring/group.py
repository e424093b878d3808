"""An expiring group: entries put under keys with a TTL, and the handler their expiries go to.

``app.expiring(name, ttl=...)`` returns one. Its entries live in the app's store, indexed by
expiry like tasks by due time, so they are handled on time whatever Redis's keyspace
notifications do, and those that expired while every worker was down are handled when one
starts (see :mod:`.trigger`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from duetime.clock import MAX_MS, from_ms
from duetime.errors import PayloadError, SchemaError, ValidationError
from duetime.record import Record
from duetime.stores.base import NewTask, Store, StoredTask
from duetime.stores.capabilities import ENTRIES, use
from duetime.tasktype import Handler, TaskType, call_mode
from duetime.triggers.expiry import EXPIRING
from duetime.validate import (
    RESERVED_END,
    check_id,
    duration_ms,
    encode_payload,
    is_occurrence_id,
)


class ExpiringGroup:
    """Entries that expire, and the handler their expiries go to.

    Args:
        task_type: the group's task type (its name is the group's), with the group's
            retries, back-off, time-out, concurrency and lease.
        ttl: the default time to live.
        open_store: opens the app's store (once) and returns it.
        now_ms: the store's time now.
        max_payload_bytes: the largest value accepted, as JSON (with its key).
    """

    def __init__(
        self,
        task_type: TaskType,
        ttl: timedelta | float,
        *,
        open_store: Callable[[object], Awaitable[Store]],
        now_ms: Callable[[], Awaitable[int]],
        max_payload_bytes: int,
    ) -> None:
        self.task_type = task_type
        self.name = task_type.name
        self.ttl_ms = duration_ms("ttl", ttl)
        self._open = open_store
        self._now_ms = now_ms
        self._max_bytes = max_payload_bytes

    def on_expire(self, handler: Handler) -> Handler:
        """Decorate the handler of the group's expiries: ``(key, value)`` or ``(key, value,
        ctx)``, async or a plain ``def``. It runs once per expiry, on one worker, with the
        group's retries; ``ctx.occurrence`` is ``"<key>@<expiry ms>"``.

        Raises:
            ValidationError: the handler takes other arguments, or the group has one.
        """
        self.task_type.bind(handler, call_mode(handler, takes=self.task_type.takes))
        return handler

    async def put(
        self,
        key: str,
        value: Any,
        *,
        ttl: timedelta | float | None = None,
        keep_ttl: bool = False,
        connection: object = None,
    ) -> datetime:
        """Put ``value`` (any JSON value) under ``key``, expiring after ``ttl`` (default: the
        group's). With ``keep_ttl``, a live entry keeps its expiry (an entry that expired
        or never was gets the TTL). A put after an expiry starts a new entry; the expired
        value still goes to the handler. Returns when the entry expires.

        Raises:
            ValidationError: a bad ``key`` (a key must not end in ``@`` and digits: that
                end is reserved for the expiries handed off), ``value`` or ``ttl`` (one that
                puts the expiry past the year 9999); the error names it, and nothing is
                written.
            ConfigError: ``connection`` is refused (see ``schedule``'s); with it, the entry
                is written in the transaction open on it (docs/transactions.md).
        """
        put = self.put_many([(key, value)], ttl=ttl, keep_ttl=keep_ttl, connection=connection)
        return (await put)[0]

    async def put_many(
        self,
        items: Mapping[str, Any] | Iterable[tuple[str, Any]],
        *,
        ttl: timedelta | float | None = None,
        keep_ttl: bool = False,
        connection: object = None,
    ) -> list[datetime]:
        """Put many entries as :meth:`put` does, in as few round trips as possible; every
        entry is checked before any is written. Returns when each expires, in order."""
        pairs = list(items.items() if isinstance(items, Mapping) else items)
        ttl_ms = self.ttl_ms if ttl is None else duration_ms("ttl", ttl)
        records = [(check_id(key, "key"), self._record(key, value)) for key, value in pairs]
        if len({key for key, _ in records}) < len(records):
            raise ValidationError("key", "the same key twice in one call")
        store = await self._open(connection)
        now = await self._now_ms()
        # Checked for keep_ttl too: an entry that is not live gets the TTL.
        if now + ttl_ms > MAX_MS:
            raise ValidationError("ttl", "puts the expiry past the year 9999")
        entries = [NewTask(key, now + ttl_ms, record) for key, record in records]
        entry_store = use(store, ENTRIES)
        dues = await entry_store.put_entry(self.name, entries, keep_ttl=keep_ttl, now_ms=now)
        return [from_ms(due) for due in dues]

    def _record(self, key: str, value: Any) -> str:
        try:
            payload = encode_payload({"key": key, "value": value}, self._max_bytes)
        except PayloadError as exc:
            raise PayloadError("value", exc.problem.replace("payload", "value")) from None
        return Record(payload, EXPIRING).encode()

    async def get(self, key: str) -> Any:
        """The value under ``key``, or None once it expired (even before its handler ran)."""
        live = await self._live(key)
        if live is None or live.record is None:
            return None
        try:
            return Record.decode(live.record).payload.get("value")
        except SchemaError:
            return None

    async def expires_at(self, key: str) -> datetime | None:
        """When the entry under ``key`` expires, or None when there is none live."""
        live = await self._live(key)
        return None if live is None else from_ms(live.due_ms)

    async def delete(self, key: str, *, connection: object = None) -> bool:
        """Remove the entry under ``key``, without running the handler; whether there was a
        live one (an expired entry is still handled)."""
        _check_lookup(key)
        store = await self._open(connection)
        return await use(store, ENTRIES).remove_entry(self.name, key, await self._now_ms())

    async def _live(self, key: str) -> StoredTask | None:
        _check_lookup(key)
        store = await self._open(None)
        stored = await store.get(self.name, key)
        if stored is None or stored.state != "due" or stored.due_ms <= await self._now_ms():
            return None
        return stored


def _check_lookup(key: str) -> None:
    """Check the key of a lookup: any id the store may hold, but for an expiry's own id
    (``"<key>@<expiry ms>"``), which is a task of the group (``app.get``, ``app.cancel``),
    never an entry."""
    check_id(key, "key", stored=True)
    if is_occurrence_id(key):
        raise ValidationError("key", RESERVED_END)
