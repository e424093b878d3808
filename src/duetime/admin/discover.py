"""Task types as the store holds them, for a process without the handlers' code: the
``duetime`` command and the dashboard given a store URL rather than an app module."""

from __future__ import annotations

from duetime.app import App
from duetime.features.keyevents.routes import UNROUTED
from duetime.partitions.layout import stored_partitions
from duetime.validate import check_name

#: Types named so are duetime's own (poller calls, partition counts): left out of listings.
INTERNAL_PREFIX = "duetime."
#: Internal types listed all the same: the dead letters of key timers that named no handler
#: are the user's data.
SHOWN_INTERNAL = frozenset({UNROUTED})


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
    """The task types that hold a task in ``app``'s store and namespace, sorted, adopted
    (see :func:`adopt`); those named ``duetime.*`` only with ``internal`` (but for
    :data:`SHOWN_INTERNAL`).

    Raises:
        StoreError: the store cannot be read.
    """
    names = await (await app.open()).task_types()
    if not internal:
        names = [n for n in names if not n.startswith(INTERNAL_PREFIX) or n in SHOWN_INTERNAL]
    await adopt(app, *names)
    return names
