"""Numbered migration files (``NNNN_name.sql``), read in order: shared by the SQL stores."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from duetime.errors import SchemaError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

_NAME = re.compile(r"(\d{4})_([a-z0-9_]+)\.sql")


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered migration: ``migrations/<version:04d>_<name>.sql``."""

    version: int
    name: str
    sql: str


def load_folder(folder: Traversable) -> tuple[Migration, ...]:
    """The migrations in ``folder``, in order.

    Raises:
        SchemaError: a file is misnamed, or the versions do not run 1, 2, 3, ... without gaps.
    """
    found = []
    for entry in folder.iterdir():
        if not entry.name.endswith(".sql"):
            continue
        match = _NAME.fullmatch(entry.name)
        if match is None:
            raise SchemaError(f"migration file {entry.name!r} is not named NNNN_name.sql")
        found.append(Migration(int(match[1]), match[2], entry.read_text()))
    found.sort(key=lambda m: m.version)
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise SchemaError(f"migrations must be numbered 1, 2, 3, ...: {[m.version for m in found]}")
    return tuple(found)
