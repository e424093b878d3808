"""duetime's pytest plugin under the name duetime documents: the ``duetime_harness`` and
``duetime_app`` fixtures. It lives in the top-level module ``pytest_duetime``, which the
``pytest11`` entry point names so that pytest imports nothing of duetime until a test uses
it. Naming this module too (``-p duetime.testing.pytest_plugin``) is harmless."""

from __future__ import annotations

from pytest_duetime import (
    APP_OPTION,
    duetime_app,
    duetime_harness,
    duetime_harness_anyio,
    pytest_addoption,
    pytest_configure,
)

__all__ = [
    "APP_OPTION",
    "duetime_app",
    "duetime_harness",
    "duetime_harness_anyio",
    "pytest_addoption",
    "pytest_configure",
]
