"""The PostgreSQL store: tasks in one schema of a PostgreSQL database (``postgresql://``).

Needs the ``postgres`` extra (psycopg 3 and its pool)."""

from __future__ import annotations
