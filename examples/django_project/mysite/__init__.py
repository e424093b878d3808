"""A minimal Django project that schedules with duetime."""

from __future__ import annotations
