"""The files the stores ship beside their code (SQL statements and migrations, Lua
scripts), found in the installed package."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable


def folder(package: str, name: str) -> Traversable:
    """``<package>/<name>/``: the folder itself where the package is one on disk (the usual
    install, read without importlib.resources, whose import adds some 7 ms to a process's
    start), else what importlib.resources finds (a package inside a zip file, say)."""
    file = getattr(importlib.import_module(package), "__file__", None)
    if file:
        path = Path(file).parent / name
        if path.is_dir():
            return path
    from importlib import resources

    return resources.files(package) / name
