"""The App's calls for keys other programs write, expiring: ``@app.on_key_expired`` and
``@app.key_timer``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, Unpack

from duetime.errors import ValidationError
from duetime.features.keyevents.feature import KeyEventFeature
from duetime.model import TaskOptions
from duetime.registry import AppSide
from duetime.tasktype import Handler, TaskType, call_mode
from duetime.validate import check_int, check_name

if TYPE_CHECKING:
    from duetime.features.keyevents.routes import KeyRoute


class KeyEventCalls:
    """The key expiry handlers of an :class:`~duetime.App` (a part of it)."""

    @property
    def key_routes(self: AppSide) -> list[KeyRoute]:
        """Where the app's key expiry events go."""
        return self.registry.get(KeyEventFeature).routes

    def on_key_expired(
        self: AppSide,
        pattern: str,
        *,
        db: int = 0,
        name: str | None = None,
        **options: Unpack[TaskOptions],
    ) -> Callable[[Handler], TaskType]:
        """Run the decorated function when a key matching ``pattern`` (a glob) expires in
        Redis database ``db``: keys other programs write. It takes ``(key)`` or ``(key,
        ctx)``, and runs as a task of type ``name`` (default: its own name) with
        :meth:`~duetime.App.task`'s options, once across workers for each expiry.

        At most once, and on Redis's time: the expiry events are Redis's keyspace
        notifications, which Redis publishes when it removes the key (seconds late with many
        volatile keys), and an event published while no worker listens is gone. Two expiries
        of one key within 5 s count as one. For work that must not be lost, use
        :meth:`~duetime.App.expiring`. A worker turns the notifications on
        (``notify-keyspace-events`` flags ``E`` and ``x``) when it can.

        Raises:
            ConfigError: the store has no key expiry events (it is not Redis).
            ValidationError: a bad pattern, database, name or option.
        """
        if not isinstance(pattern, str) or not pattern:
            raise ValidationError("pattern", "must be a non-empty glob such as 'session:*'")
        return _key_route(self, "expired", db, name, options, pattern)

    def key_timer(
        self: AppSide, name: str, *, db: int = 0, **options: Unpack[TaskOptions]
    ) -> Callable[[Handler], TaskType]:
        """Run the decorated function for key timers named ``name`` in Redis database
        ``db``: keys ``<id>:??<name>??<JSON>`` that expire, as a key-name timer scheduler's
        producers write them (SET, then EXPIRE, in one MULTI). It takes ``(message)`` or
        ``(message, ctx)``, the JSON parsed, and runs as a task of type ``name`` with
        :meth:`~duetime.App.task`'s options, once across workers for each key. Keys naming
        no handler, or that do not parse, go to the dead letters of type
        ``duetime.keyTimers``, never run. At most once, on Redis's time, as
        :meth:`on_key_expired`.

        Raises:
            ConfigError: the store has no key expiry events (it is not Redis), or not the
                database ``db``.
            ValidationError: a bad name, database or option.
        """
        return _key_route(self, "timer", db, name, options)


def _key_route(
    app: AppSide,
    kind: Literal["expired", "timer"],
    db: int,
    name: str | None,
    options: TaskOptions,
    pattern: str = "",
) -> Callable[[Handler], TaskType]:
    from duetime.features.keyevents.routes import UNROUTED, KeyRoute, file_unrouted

    feature = app.registry.get(KeyEventFeature)
    check_int("db", db, minimum=0)
    if app.store_known():  # else the feature's check does it when the store opens
        feature.check_store(app.store(), app.where(), [db])
    takes = ("key",) if kind == "expired" else ("message",)

    def register(fn: Handler) -> TaskType:
        type_name = check_name("name", name or getattr(fn, "__name__", ""))
        task_type = app.task(type_name, **options)(fn)
        task_type.mode, task_type.takes = call_mode(fn, takes=takes), takes
        route = KeyRoute(kind, db, type_name, pattern, type_name if kind == "timer" else "")
        feature.routes.append(route)
        if kind == "timer" and UNROUTED not in app.types:
            app.task(UNROUTED, retries=0)(file_unrouted)
        return task_type

    return register
