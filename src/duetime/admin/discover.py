"""Task types as the store holds them, for a process without the handlers' code: the
``duetime`` command and the dashboard given a store URL rather than an app module; and a
view of the store that reads the types an app does not know without declaring them on it."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

from duetime.app import App
from duetime.errors import ValidationError
from duetime.features.keyevents.routes import UNROUTED
from duetime.partitions.layout import stored_partitions
from duetime.partitions.store import PartitionedStore
from duetime.stores.base import Store
from duetime.validate import check_name

log = logging.getLogger(__name__)

#: Types named so are duetime's own (poller calls, partition counts): left out of listings.
INTERNAL_PREFIX = "duetime."
#: Internal types listed all the same: the dead letters of key timers that named no handler
#: are the user's data.
SHOWN_INTERNAL = frozenset({UNROUTED})
#: What a listing says of a name found in the store (its tasks, its workers' or its last
#: hour's counts) that is not a valid type name; %r is the name.
INVALID_WARNING = "skipped %r, found in the store: it is not a valid type name"


@dataclass(frozen=True, slots=True)
class Found:
    """Type names read from the store.

    Attributes:
        names: the valid ones, sorted.
        invalid: those that are not valid task type names (written by another program or
            an older version), sorted: a listing skips them and says so.
    """

    names: list[str]
    invalid: list[str]


def is_valid(name: str) -> bool:
    """Whether ``name`` is a valid task type name."""
    try:
        check_name("task_type", name)
    except ValidationError:
        return False
    return True


def split_names(names: Iterable[str]) -> Found:
    """``names`` without duplicates, the valid apart from the others."""
    unique = set(names)
    valid = sorted(n for n in unique if is_valid(n))
    return Found(valid, sorted(unique.difference(valid)))


def shown(names: Iterable[str]) -> list[str]:
    """``names`` without duetime's own types (but for :data:`SHOWN_INTERNAL`)."""
    return [n for n in names if not n.startswith(INTERNAL_PREFIX) or n in SHOWN_INTERNAL]


async def find_types(app: App, *, internal: bool = False) -> Found:
    """The task types that hold a task in ``app``'s store and namespace, declared on nothing;
    those named ``duetime.*`` only with ``internal`` (but for :data:`SHOWN_INTERNAL`). A
    name that is not a valid type name is set apart.

    Raises:
        StoreError: the store cannot be read.
    """
    names = await (await app.open()).task_types()
    return split_names(names if internal else shown(names))


async def adopt(app: App, *names: str) -> None:
    """Declare on ``app`` the types ``names`` it does not know, each with the partitions the
    store holds it in, so that any type name can be read and changed without its code.

    Raises:
        ValidationError: a name is not a valid task type name (nothing is read).
        StoreError: the store cannot be read.
    """
    for name in names:
        check_name("task_type", name)
    unknown = [name for name in names if name not in app.types]
    if not unknown:
        return
    store = await app.open()
    for name in unknown:
        app.declare(name, partitions=await stored_partitions(store, name))


async def stored_types(app: App, *, internal: bool = False) -> list[str]:
    """The valid task type names of :func:`find_types`, adopted (see :func:`adopt`); the
    others are skipped with a warning logged.

    Raises:
        StoreError: the store cannot be read.
    """
    found = await find_types(app, internal=internal)
    for name in found.invalid:
        log.warning(INVALID_WARNING, name)
    await adopt(app, *found.names)
    return found.names


class StoreView:
    """Calls on any task type the store holds, made without declaring it on ``app``: a tool
    that reads the store (the dashboard, ``duetime stats``) must not make ``app.schedule``
    accept a type the app's code does not have.

    A type ``app`` knows is called through ``app``. Any other goes through a private App of
    the view's own, which shares ``app``'s store and clock, and on which each such type is
    declared with the partitions the store keeps for it.
    """

    def __init__(self, app: App) -> None:
        self.app = app
        self._private: App | None = None
        self._opened: Store | None = None  # the app's store the private app shares

    async def client(self, name: str) -> App:
        """The app to call about the type ``name``.

        Raises:
            ValidationError: ``name`` is not a valid task type name.
            StoreError: the store cannot be read.
        """
        if name in self.app.types:
            return self.app
        check_name("task_type", name)
        private = await self._private_app()
        await adopt(private, name)
        return private

    async def holds(self, name: str) -> bool:
        """Whether the store holds a task of the type ``name`` (due, running or dead), or a
        partition count for it; declares nothing. False for a name that is not valid.

        Raises:
            StoreError: the store cannot be read.
        """
        if not is_valid(name):
            return False
        await self._private_app()
        inner = _inner(cast(Store, self._opened))
        if await stored_partitions(inner, name) > 1:
            return True
        return any((await inner.count(name)).values())

    async def _private_app(self) -> App:
        opened = await self.app.open()
        if self._private is None or opened is not self._opened:  # the app was opened again
            app = self.app
            self._private = App(
                app.url,
                namespace=app.namespace,
                clock=app.clock,
                max_payload_bytes=app.max_payload_bytes,
                durability=app.durability,
                store=cast(Store, _Borrowed(_inner(opened))),
            )
            self._opened = opened
        return self._private


def _inner(store: Store) -> Store:
    """The store under the partitions wrapper an app puts around it."""
    return store.inner if isinstance(store, PartitionedStore) else store


class _Borrowed:
    """A store another app opened and will close: opening and closing it here do nothing."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def open(self) -> None:
        pass

    async def close(self) -> None:
        pass
