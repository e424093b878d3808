"""Django management commands of duetime."""

from __future__ import annotations
