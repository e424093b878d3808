"""Where a type's tasks are stored: which partition each id belongs to, and how many
partitions a type has, kept in the store itself, so that every process agrees and a type is
never read with another count than it was written with.

The count lives as a task of the type ``duetime.layout`` (which no worker runs), id the type,
due never, payload ``{"partitions": N}``; a type without one is stored in one partition,
today's layout. A process checks each type once, on first use.
"""

from __future__ import annotations

import zlib
from typing import Any

from duetime.clock import NEVER_MS
from duetime.errors import ConfigError, SchemaError
from duetime.record import Record
from duetime.stores.base import NewTask, Store
from duetime.validate import dump_json

LAYOUT_TYPE = "duetime.layout"
#: Between a type's name and a partition's number: never part of a type name.
SEPARATOR = "#"


def partition_of(task_id: str, partitions: int) -> int:
    """The partition of ``task_id`` among ``partitions``: the CRC-32 of the id up to its
    first ``@`` (so that ``"<id>@<ms>"`` stays with ``<id>``), modulo ``partitions``."""
    base = task_id.split("@", 1)[0]
    return zlib.crc32(base.encode("utf-8", "surrogateescape")) % partitions


def part_name(task_type: str, partition: int) -> str:
    """The store type of one partition of ``task_type``."""
    return f"{task_type}{SEPARATOR}{partition}"


def _record(partitions: int) -> str:
    return Record(dump_json({"partitions": partitions})).encode()


async def stored_partitions(store: Store, task_type: str) -> int:
    """How many partitions the store holds ``task_type``'s tasks in (1 when it says none)."""
    found = await store.get(LAYOUT_TYPE, task_type)
    if found is None or found.record is None:
        return 1
    try:
        count: Any = Record.decode(found.record).payload.get("partitions")
    except SchemaError:
        return 1
    return count if type(count) is int and count >= 1 else 1


async def check_layout(store: Store, task_type: str, partitions: int) -> None:
    """Make the store's count for ``task_type`` ``partitions``, unless it holds tasks of the
    type under another count.

    Raises:
        ConfigError: the type has tasks (due, running or dead) in another number of
            partitions.
    """
    stored = await stored_partitions(store, task_type)
    if stored == partitions:
        return
    parts = [task_type] if stored == 1 else [part_name(task_type, p) for p in range(stored)]
    for part in parts:
        if any((await store.count(part)).values()):
            raise ConfigError(
                f"task type {task_type!r} has tasks stored in {stored} partition(s), and this "
                f"process declares {partitions}: run them (or cancel them, dead letters "
                f"included) with the old count first, or keep partitions={stored}"
            )
    if partitions == 1:
        await store.cancel(LAYOUT_TYPE, task_type)
    else:
        await store.schedule(LAYOUT_TYPE, [NewTask(task_type, NEVER_MS, _record(partitions))])
