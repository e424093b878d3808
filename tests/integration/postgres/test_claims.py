"""PostgreSQL claims: a row another transaction holds is skipped, not waited for (SKIP
LOCKED), and claimers running at once never share a task or a token."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import psycopg
import pytest

from duetime.stores import open_store
from duetime.stores.base import NewTask
from duetime.stores.postgres.config import parse_postgres_url
from duetime.stores.postgres.store import PostgresStore
from tests.postgres import fresh_schema


async def _claim(store: PostgresStore, now: int, limit: int) -> list[tuple[str, int]]:
    batch = await store.claim(
        "work", now_ms=now, limit=limit, lease_ms=30_000, max_stalls=3, at_most_once=False
    )
    return [(c.id, c.token) for c in batch.claims]


@pytest.fixture
def url() -> Iterator[str]:
    with fresh_schema() as schema_url:
        yield schema_url


async def _opened(url: str) -> PostgresStore:
    store = open_store(url, namespace="n")
    assert isinstance(store, PostgresStore)
    await store.open()
    return store


async def test_a_claim_skips_a_row_another_transaction_holds(url: str) -> None:
    store = await _opened(url)
    try:
        now = int(await store.time_ms())
        tasks = [NewTask(i, now - 1000 + n, "{}") for n, i in enumerate("abc")]
        await store.schedule("work", tasks)
        config = parse_postgres_url(url, namespace="n")
        with psycopg.connect(config.conninfo, options=f"-c search_path={config.schema}") as held:
            held.execute(b"SELECT id FROM tasks WHERE id = 'a' FOR UPDATE")  # a transaction
            started = time.monotonic()
            claimed = await _claim(store, now, 3)
            assert time.monotonic() - started < 1.0
            assert [task_id for task_id, _ in claimed] == ["b", "c"]
            held.rollback()
        assert [task_id for task_id, _ in await _claim(store, now, 3)] == ["a"]
    finally:
        await store.close()


async def test_claimers_at_once_share_no_task_and_no_token(url: str) -> None:
    stores = [await _opened(url) for _ in range(4)]
    try:
        now = int(await stores[0].time_ms())
        n = 2000
        await stores[0].schedule("work", [NewTask(f"t{i}", now - i, "{}") for i in range(n)])

        async def drain(store: PostgresStore) -> list[tuple[str, int]]:
            got: list[tuple[str, int]] = []
            while True:
                claimed = await _claim(store, now, 50)
                if not claimed:
                    return got
                got += claimed

        results = await asyncio.gather(*(drain(store) for store in stores))
        ids = [task_id for got in results for task_id, _ in got]
        tokens = [token for got in results for _, token in got]
        assert sorted(ids) == sorted(f"t{i}" for i in range(n))
        assert len(set(tokens)) == n
        assert all(len(got) > 0 for got in results), [len(got) for got in results]
    finally:
        for store in stores:
            await store.close()
