"""The key-events feature as workers see it: a worker that runs key expiry handlers makes
sure the server publishes expiries, and listens to them while it runs."""

from __future__ import annotations

import logging
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from duetime.clock import Clock
from duetime.errors import StoreError
from duetime.events import Listener
from duetime.features.base import Feature, WorkerRun
from duetime.stores.base import Store
from duetime.stores.capabilities import KEY_EVENTS, Capability, require, use

if TYPE_CHECKING:  # the routes are imported by an app that has one (keyevents/calls.py)
    from duetime.features.keyevents.routes import KeyRoute

log = logging.getLogger(__name__)


class KeyEventFeature(Feature):
    """Where an app's key expiry events go (``on_key_expired``, ``key_timer``)."""

    def __init__(self) -> None:
        self.routes: list[KeyRoute] = []

    def needs(self) -> Sequence[tuple[Capability[Any], str]]:
        return [(KEY_EVENTS, "key expiry handlers")] if self.routes else []

    def check(self, store: object, where: str) -> None:
        if self.routes:
            self.check_store(store, where, sorted({r.db for r in self.routes}))

    @staticmethod
    def check_store(store: object, where: str, dbs: Sequence[int]) -> None:
        """Refuse a store without key events, or without one of the databases ``dbs``.

        Raises:
            ConfigError: naming what is missing.
        """
        require(store, KEY_EVENTS, "key expiry handlers", where)
        for db in dbs:
            use(store, KEY_EVENTS).check_key_database(db)

    async def start(self, run: WorkerRun) -> Sequence[Listener]:
        routes = [r for r in self.routes if r.task_type in run.types]
        if not routes:
            return ()
        return [_Listening(routes)]


class _Listening(Listener):
    """While a worker runs: the expiries of its routes' keys, turned into tasks."""

    def __init__(self, routes: list[KeyRoute]) -> None:
        self._routes = routes

    async def start(self, store: Store, clock: Clock) -> None:
        # Key expiry handlers need Redis to publish expiries: the log says when it will not.
        try:
            problems = await use(store, KEY_EVENTS).enable_key_events()
        except StoreError as exc:
            log.warning("could not check that the store publishes key expiries: %s", exc)
            return
        except Exception:
            log.exception("could not check that the store publishes key expiries")
            return
        for problem in problems:
            log.error("%s", problem)

    def loops(self, store: Store, clock: Clock) -> list[Coroutine[Any, Any, None]]:
        from duetime.features.keyevents.routes import KeyEvents

        return [KeyEvents(self._routes, use(store, KEY_EVENTS), clock).run()]
