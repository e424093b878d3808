"""The ``duetime`` command: run a worker, and look at or change tasks from a shell.

Every command but ``worker`` works on the app a module names (``MODULE:APP``) or on a store
URL alone (``--url``); see :mod:`duetime.cli.target`. Exit codes: see
:mod:`duetime.cli.output`. The commands are grouped by family, a module each, and put
together in :mod:`duetime.cli.group`.
"""

from __future__ import annotations

from duetime.cli.group import main

__all__ = ["main"]
