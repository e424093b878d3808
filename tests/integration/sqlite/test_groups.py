"""Groups on SQLite (0010_groups.sql): what a type without groups stores, the moment a queue
gets groups, the groups' rows (turns, stale rows, rate times) and an older file upgraded."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from duetime.stores.base import ClaimBatch, NewTask, Outcome
from duetime.stores.gating import Gate
from duetime.stores.sqlite import claiming, ops, schema
from duetime.stores.sqlite.config import parse_sqlite_url
from duetime.stores.sqlite.connection import Database
from duetime.stores.sqlite.ops import Queues
from duetime.stores.sqlite.store import SqliteStore
from tests.integration.sqlite.support import REC, T0, make_store, url_of, versions

LEASE = 10_000
ONE = Gate(group_running=1)


def rows(path: Path, sql: str) -> list[Any]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


async def claim(
    store: SqliteStore, now: int = T0, limit: int = 100, gate: Gate | None = ONE
) -> ClaimBatch:
    return await store.claim(
        "mail",
        now_ms=now,
        limit=limit,
        lease_ms=LEASE,
        max_stalls=2,
        at_most_once=False,
        gate=gate,
    )


async def test_a_type_without_groups_stores_none(store: SqliteStore, tmp_path: Path) -> None:
    await store.schedule("mail", [NewTask("low", T0 - 20, REC, 0), NewTask("hi", T0, REC, 5)])
    # Group limits on a type none of whose tasks has a group: claimed as before, by
    # priority, and nothing is written for groups.
    assert [c.id for c in (await claim(store)).claims] == ["hi", "low"]
    db = tmp_path / "duetime.db"
    assert rows(db, "SELECT grp FROM duetime_tasks") == [(None,), (None,)]
    assert rows(db, "SELECT grouped FROM duetime_queues") == [(0,)]
    assert rows(db, "SELECT * FROM duetime_groups") == []


async def test_the_first_grouped_write_puts_the_tasks_before_it_in_the_group_none(
    store: SqliteStore, tmp_path: Path
) -> None:
    await store.schedule("mail", [NewTask("n1", T0 - 30, REC), NewTask("n2", T0 - 20, REC)])
    await store.schedule("mail", [NewTask("g1", T0 - 10, REC, 0, "G")])
    db = tmp_path / "duetime.db"
    assert sorted(rows(db, "SELECT id, grp FROM duetime_tasks")) == [
        ("g1", "G"),
        ("n1", ""),
        ("n2", ""),
    ]
    assert sorted(rows(db, "SELECT name, ready_ms FROM duetime_groups")) == [
        ("", T0 - 30),
        ("G", T0 - 10),
    ]
    await store.schedule("mail", [NewTask("n3", T0 - 5, REC)])  # no group: ''
    assert rows(db, "SELECT grp FROM duetime_tasks WHERE id = 'n3'") == [("",)]
    # The tasks without a group take their turn as one group, held by no group limit.
    assert [c.id for c in (await claim(store)).claims] == ["n1", "n2", "n3", "g1"]
    got = await store.get("mail", "n1")
    assert got is not None and (got.state, got.group) == ("running", "")


async def test_groups_take_turns_across_claims(store: SqliteStore) -> None:
    # 100 groups of 2 tasks each, all due together; claims of 10 under group_running=1000:
    # each claim serves groups the ones before did not, until every group had its turn.
    await store.schedule(
        "mail",
        [NewTask(f"g{g:03}-{i}", T0 - 100, REC, 0, f"g{g:03}") for g in range(100) for i in (0, 1)],
    )
    gate = Gate(group_running=1000)
    seen: list[str] = []
    for turn in range(10):
        batch = await claim(store, T0 + turn, limit=10, gate=gate)
        seen += [c.id.split("-")[0] for c in batch.claims]
    assert len(seen) == 100 and len(set(seen)) == 100


async def test_a_groups_only_task_comes_back_after_its_lease_and_its_retry(
    store: SqliteStore, tmp_path: Path
) -> None:
    await store.schedule("mail", [NewTask("a0", T0 - 10, REC, 0, "A")])
    (first,) = (await claim(store)).claims
    # Nothing of A is due and it has no rate: its row goes.
    assert rows(tmp_path / "duetime.db", "SELECT * FROM duetime_groups") == []
    # Its lease lapses: the reap makes it due again, and its group's turn with it.
    (again,) = (await claim(store, T0 + LEASE + 1)).claims
    assert (again.id, again.token) == ("a0", first.token + 1)
    retry = Outcome("retry", again, due_ms=T0 + LEASE + 50, record=REC, error="boom")
    assert await store.settle("mail", [retry], T0 + LEASE + 2) == [True]
    held = await claim(store, T0 + LEASE + 3)
    assert held.claims == [] and held.next_ms == T0 + LEASE + 50
    assert [c.id for c in (await claim(store, T0 + LEASE + 50)).claims] == ["a0"]


async def test_stale_rows_go_and_a_groups_rate_time_stays(
    store: SqliteStore, tmp_path: Path
) -> None:
    db = tmp_path / "duetime.db"
    await store.schedule(
        "mail", [NewTask("a0", T0 - 10, REC, 0, "A"), NewTask("b0", T0, REC, 0, "B")]
    )
    # A claim without group limits takes both; the groups' rows are stale, and the next
    # claim with group limits drops them.
    assert len((await claim(store, gate=None)).claims) == 2
    assert len(rows(db, "SELECT * FROM duetime_groups")) == 2
    assert (await claim(store, T0 + 1)).claims == []
    assert rows(db, "SELECT * FROM duetime_groups") == []
    # Under a group rate, the row of a group with nothing due keeps its rate time while it
    # is ahead: the group's next task waits for it.
    paced = Gate(group_interval_ms=1000.0, group_burst=1.0)
    await store.schedule("mail", [NewTask("a1", T0 + 10, REC, 0, "A")])
    assert [c.id for c in (await claim(store, T0 + 10, gate=paced)).claims] == ["a1"]
    assert rows(db, "SELECT name, ready_ms, tat FROM duetime_groups") == [("A", None, T0 + 1010)]
    await store.schedule("mail", [NewTask("a2", T0 + 20, REC, 0, "A")])
    held = await claim(store, T0 + 20, gate=paced)
    assert held.claims == [] and held.open_ms == T0 + 1010
    assert [c.id for c in (await claim(store, T0 + 1010, gate=paced)).claims] == ["a2"]


async def test_a_file_of_version_9_upgrades_and_its_tasks_join_groups(tmp_path: Path) -> None:
    path = tmp_path / "v9.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    for migration in schema.MIGRATIONS[:9]:
        for statement in schema.statements(migration.sql):
            conn.execute(statement)
        conn.execute(
            "INSERT INTO duetime_schema VALUES (?, ?, 0)", (migration.version, migration.name)
        )
    conn.execute("INSERT INTO duetime_queues (qid, namespace, type) VALUES (3, 'ns', 'mail')")
    conn.execute(
        "INSERT INTO duetime_tasks (qid, id, due_ms, record) VALUES (3, 'old', ?, ?)",
        (T0 - 50, REC),
    )
    conn.execute("COMMIT")
    conn.close()
    assert versions(path) == list(range(1, 10))

    store = make_store(path)
    await store.open()
    try:
        old = await store.get("mail", "old")
        assert old is not None and (old.state, old.group) == ("due", "")
        await store.schedule("mail", [NewTask("new", T0 - 10, REC, 0, "N")])
        assert sorted(c.id for c in (await claim(store)).claims) == ["new", "old"]
    finally:
        await store.close()
    assert versions(path) == list(range(1, schema.LATEST + 1)) and schema.LATEST >= 10


async def test_a_claim_that_meets_only_groups_at_their_limit_does_not_spin(
    store: SqliteStore,
) -> None:
    # More groups than a claim reads, every one at its group_concurrency with more due: a
    # claim that takes nothing says to wait for a settle (the earliest lease), even though
    # it did not read every group.
    await store.schedule(
        "mail",
        [NewTask(f"g{g:02}-{i}", T0 - 100, REC, 0, f"g{g:02}") for g in range(40) for i in (0, 1)],
    )
    taken: list[str] = []
    for turn in range(8):
        batch = await claim(store, T0 + turn, limit=5)
        taken += [c.id for c in batch.claims]
    assert sorted(taken) == [f"g{g:02}-0" for g in range(40)]
    held = await claim(store, T0 + 10, limit=5)
    assert held.claims == [] and held.open_ms is None and held.next_ms == T0 + LEASE


def claim_steps(path: Path, backlog: int, most: int) -> tuple[int, int]:
    """SQLite's VM steps for a claim of 100 under group limits, with ``backlog`` due tasks in
    one group (at its limit when ``most`` is 10: 10 of them run) and 10 tasks in each of 10
    others; and how many of the big group's tasks it took."""
    db = Database.open(parse_sqlite_url(url_of(path), namespace="ns"))
    try:
        queues = Queues("ns")
        big = [NewTask(f"big{k}", T0 - 60_000 + k // 100, REC, 0, "big") for k in range(backlog)]
        db.write(ops.schedule, queues, "mail", big, False)
        gate = Gate(group_running=most)
        if most == 10:
            db.write(claiming.claim, queues, "mail", T0, 10, LEASE, 2, False, 0, gate)
        small = [
            NewTask(f"s{g}-{k}", T0 - 1, REC, 0, f"g{g}") for g in range(10) for k in range(10)
        ]
        db.write(ops.schedule, queues, "mail", small, False)
        steps = 0

        def count() -> int:
            nonlocal steps
            steps += 1
            return 0

        db.conn.set_progress_handler(count, 100)
        batch = db.write(claiming.claim, queues, "mail", T0 + 1, 100, LEASE, 2, False, 0, gate)
        db.conn.set_progress_handler(None, 0)
        assert len(batch.claims) == 100
        return steps, sum(1 for c in batch.claims if c.id.startswith("big"))
    finally:
        db.close()


def test_a_claims_work_does_not_grow_with_a_groups_backlog(tmp_path: Path) -> None:
    # Counted in SQLite's own steps, not timed: the same claim with a backlog 20 times
    # larger in one group costs about the same, whether that group has its share of the
    # claim or is at its limit and passed over.
    for most, big_share in ((1000, 10), (10, 0)):
        small, took = claim_steps(tmp_path / f"small{most}.db", 1_000, most)
        assert took == big_share  # its turn: an equal share of the claim, or none
        large, _ = claim_steps(tmp_path / f"large{most}.db", 20_000, most)
        assert large < small * 1.3, (most, small, large)


async def test_the_claim_that_fills_a_group_and_one_that_came_late_both_wait_for_a_settle(
    store: SqliteStore, tmp_path: Path
) -> None:
    db = tmp_path / "duetime.db"
    await store.schedule("mail", [NewTask(f"a{i}", T0 - 10 + i, REC, 0, "A") for i in range(3)])
    # The claim that takes A's one slot leaves the rest of A held: the settle of its run
    # must wake the workers, though no claim has found A full yet.
    (a0,) = (await claim(store, T0 + 5)).claims
    assert rows(db, "SELECT waiting FROM duetime_queues") == [(1,)]
    assert await store.settle("mail", [Outcome("done", a0)], T0 + 6) == [True]
    assert rows(db, "SELECT waiting FROM duetime_queues") == [(0,)]  # woken, cleared
    (a1,) = (await claim(store, T0 + 20)).claims
    # A claim whose time was taken before that one's (it waited for the write lock) finds
    # A moved behind its horizon: it waits for a settle too, rather than for its idle time.
    late = await claim(store, T0 + 15)
    assert late.claims == [] and late.next_ms == T0 + 20 + LEASE
    assert rows(db, "SELECT waiting FROM duetime_queues") == [(1,)]
    assert a1.id == "a1"
