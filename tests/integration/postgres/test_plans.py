"""PostgreSQL plans of the hot path: a claim, a settle and a lease renewal of a batch read
about the batch's rows, never every task of the type, whatever the statistics say: none yet
(a table filled since its last ANALYZE, which made each claim sort every due task) or some
taken when every task was due (which made a settle compare each running task with each
outcome), and never compiled by JIT (whose cost estimate, on a table without statistics,
made the planner compile the priority claim for over a second)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import psycopg
import pytest

from duetime.stores import open_store
from duetime.stores.base import Claim, NewTask
from duetime.stores.postgres.config import parse_postgres_url
from duetime.stores.postgres.connection import connect_kwargs
from duetime.stores.postgres.queries import Q
from duetime.stores.postgres.store import PostgresStore
from tests.postgres import fresh_schema

TASKS = 20_000
BATCH = 500
#: Rows a statement about one batch may read (return, filter out, or compare in a join):
#: a few times the batch (an index holds the older versions of the rows a claim updated),
#: far below the type's 20,000 tasks.
MOST_ROWS = 4 * BATCH


@pytest.fixture
def url() -> Iterator[str]:
    with fresh_schema() as schema_url:
        yield schema_url


@pytest.fixture(params=["no statistics", "statistics of every task due"])
async def store(request: pytest.FixtureRequest, url: str) -> AsyncIterator[PostgresStore]:
    store = open_store(url, namespace="n")
    assert isinstance(store, PostgresStore)
    await store.open()
    now = int(await store.time_ms())
    record = json.dumps({"p": {"pad": "x" * 60}})
    await store.schedule("work", [NewTask(f"t{i}", now - 1000, record) for i in range(TASKS)])
    if request.param != "no statistics":
        with _connect(url) as conn:
            conn.execute(b"ANALYZE tasks")
    yield store
    await store.close()


def _connect(url: str) -> psycopg.Connection[Any]:
    """A connection set up as the store sets up its own."""
    config = parse_postgres_url(url, namespace="n")
    return psycopg.connect(config.conninfo, autocommit=True, **connect_kwargs(config))


def _qid(url: str) -> int:
    with _connect(url) as conn:
        row = conn.execute(b"SELECT qid FROM queues WHERE type = 'work'").fetchone()
    assert row is not None
    return int(row[0])


def _rows_read(plan: dict[str, Any]) -> int:
    """Rows a plan's scans and joins read: what each returned and what its filters and join
    filters dropped, over all its loops."""
    own = 0
    if plan.get("Relation Name") or "Join" in plan["Node Type"] or "Loop" in plan["Node Type"]:
        rows = plan.get("Actual Rows", 0) + plan.get("Rows Removed by Filter", 0)
        rows += plan.get("Rows Removed by Join Filter", 0)
        rows += plan.get("Rows Removed by Index Recheck", 0)
        own = rows * plan.get("Actual Loops", 1)
    return int(own) + sum(_rows_read(child) for child in plan.get("Plans", []))


#: JIT's thresholds at 0: any statement the store lets JIT compile is compiled here.
_JIT_EAGER = b"SELECT set_config(name, '0', true) FROM pg_settings WHERE name LIKE 'jit_%_cost'"


def _read_by(url: str, statements: list[tuple[bytes, dict[str, Any]]]) -> list[int]:
    """Run each statement under EXPLAIN ANALYZE, in order, in one transaction then rolled
    back, with JIT as eager as it can be; the rows each read. Fails when JIT compiled one."""
    read = []
    with _connect(url) as conn, conn.transaction():
        conn.execute(_JIT_EAGER)
        for statement, params in statements:
            cur = conn.execute(b"EXPLAIN (ANALYZE, FORMAT JSON) " + statement, params)
            row = cur.fetchone()
            assert row is not None
            assert "JIT" not in row[0][0], f"JIT compiled {statement[:60]!r}"
            read.append(_rows_read(row[0][0]["Plan"]))
        raise psycopg.Rollback
    return read


async def _batch(store: PostgresStore) -> list[Claim]:
    now = int(await store.time_ms())
    batch = await store.claim(
        "work", now_ms=now, limit=BATCH, lease_ms=60_000, max_stalls=3, at_most_once=False
    )
    assert len(batch.claims) == BATCH
    return batch.claims


async def test_a_claim_walks_the_due_index_and_updates_by_key(
    store: PostgresStore, url: str
) -> None:
    now = int(await store.time_ms())
    params = {"qid": _qid(url), "now": now, "max_stalls": 3, "at_most_once": False}
    claim = {**params, "horizon": now, "limit": BATCH, "deadline": now + 60_000}
    # As the store's claim transaction runs them.
    statements = [(Q.reap, {**params, "batch": 1000}), (Q.claim, claim)]
    reap, leased = _read_by(url, statements)
    assert reap <= MOST_ROWS and leased <= MOST_ROWS, (reap, leased)


async def test_a_settle_finds_its_tasks_by_key(store: PostgresStore, url: str) -> None:
    claims = await _batch(store)
    ids, tokens = [c.id for c in claims], [c.token for c in claims]
    qid, n = _qid(url), len(claims)
    wake = {"now": claims[0].due_ms, "channel": "c", "type": "work"}
    drop = {"qid": qid, "ids": ids, "tokens": tokens, **wake}
    (dropped,) = _read_by(url, [(Q.settle_drop, drop)])
    assert dropped <= MOST_ROWS
    rest = {
        "qid": qid,
        **wake,
        "ids": ids,
        "tokens": tokens,
        "ops": ["next"] * n,
        "dues": [c.due_ms + 60_000 for c in claims],
        "records": [c.record for c in claims],
        "errors": [None] * n,
    }
    (settled,) = _read_by(url, [(Q.settle, rest)])
    assert settled <= MOST_ROWS


async def test_a_lease_renewal_finds_its_tasks_by_key(store: PostgresStore, url: str) -> None:
    claims = await _batch(store)
    params: dict[str, Any] = {"qid": _qid(url), "deadline": claims[0].due_ms + 120_000}
    params |= {"ids": [c.id for c in claims], "tokens": [c.token for c in claims]}
    (extended,) = _read_by(url, [(Q.extend_lease, params)])
    assert extended <= MOST_ROWS


async def test_a_gated_claim_walks_the_due_index_and_updates_by_key(
    store: PostgresStore, url: str
) -> None:
    now = int(await store.time_ms())
    qid = _qid(url)
    claim = {"qid": qid, "now": now, "horizon": now, "limit": BATCH, "deadline": now + 60_000}
    claim |= {"interval": 0, "burst": 1, "max_running": 100_000}
    statements = [(Q.lock_gate, {"qid": qid}), (Q.claim_gated, claim)]
    _, leased = _read_by(url, statements)
    assert leased <= MOST_ROWS, leased


async def test_the_worker_s_looks_and_a_write_read_about_their_rows(
    store: PostgresStore, url: str
) -> None:
    """next_ms and head_due (index seeks), and a conditional write's read of its id."""
    qid = _qid(url)
    statements: list[tuple[bytes, dict[str, Any]]] = [
        (Q.next_ms, {"qid": qid, "count_running": False}),
        (Q.head_due, {"qid": qid}),
        (Q.pending, {"qid": qid, "id": "t7"}),
    ]
    read = _read_by(url, statements)
    assert all(n <= MOST_ROWS for n in read), read
