"""``manage.py duetime``."""

from __future__ import annotations
