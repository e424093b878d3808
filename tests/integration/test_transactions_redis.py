"""``connection=`` is refused on Redis: it has no transaction shared with the application."""

from __future__ import annotations

import sqlite3

import pytest

import duetime


async def test_connection_is_refused_on_redis_saying_why(redis_url: str) -> None:
    app = duetime.App(redis_url, namespace="tx")
    app.declare("mail")
    async with app:
        conn = sqlite3.connect(":memory:")
        for call in (
            app.schedule("mail", "m", connection=conn),
            app.submit("mail", connection=conn),
            app.schedule_many([duetime.Task("mail", "m")], connection=conn),
            app.cancel("mail", "m", connection=conn),
        ):
            with pytest.raises(duetime.ConfigError, match="no transaction shared.*on_commit"):
                await call
        assert await app.get("mail", "m") is None
