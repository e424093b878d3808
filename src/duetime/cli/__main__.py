"""``python -m duetime.cli``: the ``duetime`` command."""

from __future__ import annotations

from duetime.cli.group import main

main()
