"""The SQL stores' statements: one file per statement under a package's ``sql/``, loaded
once into a dataclass with a field per file, so that a statement is named in code and a
missing or extra file fails at import."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from importlib import resources
from typing import Any, TypeVar

T = TypeVar("T")


def load_statements(package: str, cls: type[T], read: Callable[[str], Any]) -> T:
    """``cls`` with each field the statement of ``<package>/sql/<field>.sql``, as ``read``
    turns the file's text.

    Raises:
        RuntimeError: the files and the fields do not match.
    """
    folder = resources.files(package) / "sql"
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    found = {e.name[: -len(".sql")] for e in folder.iterdir() if e.name.endswith(".sql")}
    if found != set(names):
        raise RuntimeError(f"sql/ does not match {cls.__name__}: {sorted(found ^ set(names))}")
    return cls(*(read((folder / f"{name}.sql").read_text()) for name in names))
