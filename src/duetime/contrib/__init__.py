"""Integrations with frameworks whose own package must be installed: one package each
(``duetime.contrib.django``). ``duetime.asgi`` needs none and lives beside the App."""

from __future__ import annotations
