"""The SQL stores' statements: one file per statement under a package's ``sql/``, loaded
once into a NamedTuple with a field per file, so that a statement is named in code and a
missing or extra file fails at import. A part that several statements share lives in a
file named ``_<part>.sql``, which a statement takes in with a line ``-- include
_<part>.sql``."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

from duetime.stores.packaged import folder as package_folder

T = TypeVar("T")

_INCLUDE = re.compile(r"^[ \t]*-- include (_\w+\.sql)[ \t]*$", re.M)


def load_statements(package: str, cls: type[T], read: Callable[[str], Any]) -> T:
    """``cls`` with each field the statement of ``<package>/sql/<field>.sql``, as ``read``
    turns the file's text.

    Raises:
        RuntimeError: the files and the fields do not match.
    """
    folder = package_folder(package, "sql")
    names: tuple[str, ...] = cls._fields  # type: ignore[attr-defined]
    found = {
        e.name[: -len(".sql")]
        for e in folder.iterdir()
        if e.name.endswith(".sql") and not e.name.startswith("_")
    }
    if found != set(names):
        raise RuntimeError(f"sql/ does not match {cls.__name__}: {sorted(found ^ set(names))}")

    def text(name: str) -> str:
        body = (folder / name).read_text()
        return _INCLUDE.sub(lambda m: (folder / m[1]).read_text().rstrip("\n"), body)

    return cls(*(read(text(f"{name}.sql")) for name in names))
