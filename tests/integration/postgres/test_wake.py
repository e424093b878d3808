"""PostgreSQL wake-ups: the listening connection, checked now and then while silent, keeps
listening and shows what it is for in pg_stat_activity."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from duetime.stores import open_store
from duetime.stores.base import NewTask
from duetime.stores.postgres import wake
from duetime.stores.postgres.store import PostgresStore
from tests.helpers import eventually
from tests.postgres import admin, fresh_schema


@pytest.fixture
def url() -> Iterator[str]:
    with fresh_schema() as schema_url:
        yield schema_url


async def test_the_listening_connection_is_checked_and_still_hears_wake_ups(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wake, "PING_SECONDS", 0.2)  # a check every 0.2 s of silence
    name = "wake_" + uuid.uuid4().hex[:8]
    store = open_store(f"{url}&application_name={name}", namespace="n")
    assert isinstance(store, PostgresStore)
    await store.open()
    heard: list[str] = []
    listener = asyncio.create_task(store.listen(lambda task_type, due_ms: heard.append(task_type)))
    try:
        await eventually(lambda: "*" in heard, what="the first (re)connection's wake-up")
        with admin() as conn:

            def statements() -> list[str]:
                rows = conn.execute(
                    "SELECT query FROM pg_stat_activity WHERE application_name = %s"
                    " AND query LIKE 'LISTEN%%'",
                    (name,),
                ).fetchall()
                return [str(q) for (q,) in rows]

            await asyncio.sleep(1.0)  # several checks of the silent connection
            # Its last statement, the check's, still says what the connection is for.
            assert len(statements()) == 1
        await store.schedule("work", [NewTask("w1", 0, "{}")])
        await eventually(lambda: "work" in heard, what="a wake-up after the checks")
    finally:
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)
        await store.close()
