"""PostgreSQL groups: claimers running at once never start more of a group than its limit,
a grouped claim reads a bounded number of rows whatever one group's backlog, and a schema
of the version before groups upgrades with its tasks."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from duetime.stores import open_store
from duetime.stores.base import NewTask, Outcome
from duetime.stores.gating import Gate
from duetime.stores.postgres import schema
from duetime.stores.postgres.config import parse_postgres_url
from duetime.stores.postgres.connection import connect_kwargs
from duetime.stores.postgres.groups import claim_params
from duetime.stores.postgres.queries import Q
from duetime.stores.postgres.store import PostgresStore
from tests.integration.postgres.test_plans import _rows_read
from tests.postgres import fresh_schema

LEASE = 30_000


@pytest.fixture
def url() -> Iterator[str]:
    with fresh_schema() as schema_url:
        yield schema_url


async def _opened(url: str) -> PostgresStore:
    store = open_store(url, namespace="n")
    assert isinstance(store, PostgresStore)
    await store.open()
    return store


def _connect(url: str) -> psycopg.Connection[Any]:
    """A connection set up as the store sets up its own."""
    config = parse_postgres_url(url, namespace="n")
    return psycopg.connect(config.conninfo, autocommit=True, **connect_kwargs(config))


async def test_claimers_at_once_never_start_more_of_a_group_than_its_limit(url: str) -> None:
    stores = [await _opened(url) for _ in range(6)]
    try:
        now = int(await stores[0].time_ms())
        tasks = [NewTask(f"a{i:03}", now - 1000 + i, "{}", 0, "A") for i in range(60)]
        tasks += [NewTask(f"b{i:03}", now - 1000 + i, "{}", 0, "B") for i in range(60)]
        await stores[0].schedule("work", tasks)
        gate = Gate(group_running=3)
        seen: set[str] = set()
        for turn in range(8):
            batches = await asyncio.gather(
                *(
                    s.claim(
                        "work",
                        now_ms=now + turn,
                        limit=10,
                        lease_ms=LEASE,
                        max_stalls=3,
                        at_most_once=False,
                        gate=gate,
                    )
                    for s in stores
                )
            )
            claims = [c for b in batches for c in b.claims]
            by_group = {g: [c for c in claims if c.id[0] == g] for g in "ab"}
            # Every claim round starts the groups afresh (the last round's runs ended):
            # together the six claims started at most three of each group.
            assert all(len(mine) <= 3 for mine in by_group.values()), by_group
            assert all(len(mine) == 3 for mine in by_group.values()) or turn > 0
            assert not seen & {c.id for c in claims}  # nothing taken twice
            seen |= {c.id for c in claims}
            with _connect(url) as conn:
                row = conn.execute(
                    b"SELECT count(*) FILTER (WHERE grp = 'A'), count(*) FILTER (WHERE grp = 'B')"
                    b" FROM tasks WHERE deadline_ms IS NOT NULL"
                ).fetchone()
            assert row is not None and row[0] <= 3 and row[1] <= 3
            done = [Outcome("done", c) for c in claims]
            assert all(await stores[0].settle("work", done, now + turn))
        assert len(seen) == 8 * 6
    finally:
        for s in stores:
            await s.close()


async def test_a_grouped_claim_reads_no_more_than_its_groups_first_tasks(url: str) -> None:
    store = await _opened(url)
    try:
        now = int(await store.time_ms())
        backlog = [NewTask(f"a{i}", now - 1000, "{}", 0, "A") for i in range(20_000)]
        for start in range(0, len(backlog), 5_000):
            await store.schedule("work", backlog[start : start + 5_000])
        small = [NewTask(f"{g}{i}", now - 500, "{}", 0, g) for g in "BCDEFGHIJ" for i in range(20)]
        await store.schedule("work", small)
        with _connect(url) as conn:
            conn.execute(b"ANALYZE tasks")
            row = conn.execute(b"SELECT qid FROM queues WHERE type = 'work'").fetchone()
            assert row is not None
            gate = Gate(group_running=1000)
            params = {
                "qid": row[0],
                "horizon": now,
                "limit": 100,
                "deadline": now + LEASE,
                "now": now,
                "interval": 0.0,
                "burst": 1.0,
                "max_running": 0,
                **claim_params(gate, 100),
            }
            with conn.transaction():
                cur = conn.execute(b"EXPLAIN (ANALYZE, FORMAT JSON) " + Q.claim_grouped, params)
                plan = cur.fetchone()
                assert plan is not None
                raise psycopg.Rollback
        # 100 tasks of 10 groups (and the index entries of the rows it updates), far below
        # the 20,000 of group A.
        assert _rows_read(plan[0][0]["Plan"]) <= 2_000
    finally:
        await store.close()


async def test_a_schema_from_before_groups_upgrades_and_keeps_its_tasks(url: str) -> None:
    config = parse_postgres_url(url, namespace="n")
    names = [m.name for m in schema.MIGRATIONS]
    before = schema.MIGRATIONS[: names.index("groups")]  # the version before groups
    assert before and all(m.name != "groups" for m in before)
    async with await psycopg.AsyncConnection.connect(
        config.conninfo, autocommit=True, options=f"-c search_path={config.schema}"
    ) as conn:
        await schema.migrate(conn, config.schema, before)
        await conn.execute(b"INSERT INTO queues (namespace, type) VALUES ('n', 'work')")
        await conn.execute(
            b"INSERT INTO tasks (qid, id, due_ms, record)"
            b" SELECT qid, 'old', 1, '{}' FROM queues WHERE type = 'work'"
        )
    store = await _opened(url)
    try:
        got = await store.get("work", "old")
        assert got is not None and (got.state, got.group) == ("due", "")
        await store.schedule(
            "work", [NewTask("new", 2, "{}", 0, "G"), NewTask("g2", 3, "{}", 0, "G")]
        )
        batch = await store.claim(
            "work",
            now_ms=10,
            limit=10,
            lease_ms=LEASE,
            max_stalls=3,
            at_most_once=False,
            gate=Gate(group_running=1),
        )
        # The task from before groups is of no group: held by no group limit.
        assert sorted(c.id for c in batch.claims) == ["new", "old"]
    finally:
        await store.close()


async def test_a_type_without_groups_writes_nothing_of_groups(url: str) -> None:
    store = await _opened(url)
    try:
        now = int(await store.time_ms())
        await store.schedule("work", [NewTask(f"t{i}", now - 10, "{}") for i in range(5)])
        batch = await store.claim(
            "work", now_ms=now, limit=5, lease_ms=LEASE, max_stalls=3, at_most_once=False
        )
        retry = [Outcome("retry", c, due_ms=now + 5, record="{}", error="x") for c in batch.claims]
        assert all(await store.settle("work", retry, now))
        with _connect(url) as conn:
            row = conn.execute(
                b"SELECT (SELECT count(*) FROM task_groups),"
                b" (SELECT count(*) FROM tasks WHERE grp IS NOT NULL),"
                b" (SELECT bool_or(grouped) FROM queues)"
            ).fetchone()
        # No group row, no task in the group indexes, the queue not kept by group.
        assert row == (0, 0, False)
    finally:
        await store.close()
