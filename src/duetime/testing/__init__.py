"""Testing code that schedules: an app on a store and a clock of the test's own
(:func:`harness`), and a pytest plugin with a ``duetime_harness`` fixture
(:mod:`duetime.testing.pytest_plugin`). See docs/testing.md."""

from __future__ import annotations

from duetime.testing.harness import Harness, harness
from duetime.testing.runs import Run

__all__ = ["Harness", "Run", "harness"]
