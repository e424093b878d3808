"""Names a package imports on first use: what an app that never uses a feature never loads
(``import duetime`` and a worker stay quick to start)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, sources: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package`` that imports each name of ``sources`` from
    the module it maps to when the name is first asked for, and keeps it in the package
    (later uses do not come back here); any other name is an AttributeError."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        source = sources.get(name)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = namespace[name] = getattr(importlib.import_module(source), name)
        return value

    return __getattr__
