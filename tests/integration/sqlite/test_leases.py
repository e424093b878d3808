"""SQLite batches: a claim among rows another program wrote (ids that are not UTF-8, no
record), and settles, which hand their outcomes to SQL as JSON, a statement for the batch:
ids JSON cannot carry, stale and repeated outcomes, an SQLite without JSON functions."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import duetime
from duetime.stores.base import Claim, NewTask, Outcome
from duetime.stores.sqlite.connection import check_json
from duetime.stores.sqlite.store import SqliteStore
from tests.integration.sqlite.support import PAST, REC

LEASE = 60_000
NOW = PAST + 10_000


async def _claim(store: SqliteStore, limit: int, now: int = NOW) -> list[Claim]:
    batch = await store.claim(
        "mail", now_ms=now, limit=limit, lease_ms=LEASE, max_stalls=3, at_most_once=False
    )
    return batch.claims


def _write_raw(path: Path, rows: list[tuple[object, int, object]]) -> None:
    """Due rows as another program could write them: any id, any record."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        (qid,) = conn.execute("SELECT qid FROM duetime_queues WHERE type = 'mail'").fetchone()
        for task_id, due, record in rows:
            conn.execute(
                "INSERT INTO duetime_tasks (qid, id, due_ms, record) VALUES (?, ?, ?, ?)",
                (qid, task_id, due, record),
            )
        conn.execute(  # text that is not UTF-8, stored as TEXT
            "INSERT INTO duetime_tasks (qid, id, due_ms, record) VALUES (?, CAST(? AS TEXT), ?, ?)",
            (qid, b"text\xff", PAST + 2, REC),
        )
    finally:
        conn.close()


async def test_a_batch_with_ids_that_are_not_utf8_runs_the_rest_in_order_and_files_them(
    store: SqliteStore, tmp_path: Path
) -> None:
    # Equal due times: the claim order is the ids' then.
    good = [("g5", PAST + 5), ("g2", PAST + 2), ("g0", PAST), ("g1b", PAST + 1)]
    good += [("g1a", PAST + 1), ("g4", PAST + 4)]
    await store.schedule("mail", [NewTask(task_id, due, REC) for task_id, due in good])
    _write_raw(
        tmp_path / "duetime.db",
        [(b"blob\xff", PAST + 1, REC), ("norecord", PAST + 3, None)],
    )

    first = await _claim(store, limit=8)  # the 8 earliest: 5 to run, 3 that cannot

    assert [c.id for c in first] == ["g0", "g1a", "g1b", "g2", "g4"]
    assert [c.due_ms for c in first] == [PAST, PAST + 1, PAST + 1, PAST + 2, PAST + 4]
    tokens = [c.token for c in first]
    assert tokens == sorted(tokens) and len(set(tokens)) == 5
    assert all(c.record == REC and c.stalls == 0 for c in first)
    dead = {t.id: t.error for t in await store.list_tasks("mail", "dead", 10)}
    assert dead == {
        "blob\udcff": "its id is not UTF-8 text: moved aside",
        "text\udcff": "its id is not UTF-8 text: moved aside",
        "norecord": "no record for this id: moved aside",
    }
    (rest,) = await _claim(store, limit=8)
    assert rest.id == "g5" and rest.token > max(tokens)

    kept = await store.settle("mail", [Outcome("done", c) for c in [*first, rest]], NOW)
    assert kept == [True] * 6
    assert await store.count("mail") == {"due": 0, "running": 0, "dead": 3}


IDS = ['quo"te', "back\\slash", "tab\tx", "nul\x00x", "emoji\U0001f600", "é", "\u2028", "{}"]


async def test_a_settle_of_ids_json_must_escape_or_cannot_carry_keeps_them_all(
    store: SqliteStore,
) -> None:
    await store.schedule("mail", [NewTask(task_id, PAST, REC) for task_id in IDS])
    claims = await _claim(store, limit=20)
    assert sorted(c.id for c in claims) == sorted(IDS)

    # A batch with a NUL in an id (SQLite's JSON ends text there) goes outcome by outcome.
    kept = await store.settle("mail", [Outcome("done", c) for c in claims], NOW)
    assert kept == [True] * len(IDS)
    assert await store.count("mail") == {"due": 0, "running": 0, "dead": 0}

    without_nul = [task_id for task_id in IDS if "\x00" not in task_id]
    await store.schedule("mail", [NewTask(task_id, PAST, REC) for task_id in without_nul])
    claims = await _claim(store, limit=20)
    retry = [Outcome("retry", c, PAST + 5, REC, "again") for c in claims[:2]]
    kept = await store.settle("mail", [*retry, *(Outcome("done", c) for c in claims[2:])], NOW)
    assert kept == [True] * len(without_nul)
    assert await store.count("mail") == {"due": 2, "running": 0, "dead": 0}


async def test_an_outcome_repeated_in_one_settle_is_kept_each_time(store: SqliteStore) -> None:
    await store.schedule("mail", [NewTask("a", PAST, REC), NewTask("b", PAST, REC)])
    a, b = await _claim(store, limit=2)

    kept = await store.settle(
        "mail", [Outcome("done", a), Outcome("done", b), Outcome("done", a)], NOW
    )

    assert kept == [True, True, True]
    assert await store.count("mail") == {"due": 0, "running": 0, "dead": 0}


async def test_a_settle_with_a_stale_outcome_writes_the_others_and_not_it(
    store: SqliteStore,
) -> None:
    await store.schedule("mail", [NewTask(task_id, PAST, REC) for task_id in "abc"])
    (old_a,) = await _claim(store, limit=1)
    b, c = await _claim(store, limit=2, now=NOW + 1)
    (new_a,) = await _claim(store, limit=1, now=NOW + LEASE)  # reaped, claimed again
    assert new_a.id == "a" and new_a.token > old_a.token

    outcomes = [Outcome("done", b), Outcome("done", old_a), Outcome("done", c)]
    kept = await store.settle("mail", outcomes, NOW + LEASE)

    assert kept == [True, False, True]
    got = await store.get("mail", "a")
    assert got is not None and got.state == "running"
    assert await store.count("mail") == {"due": 0, "running": 1, "dead": 0}


def _deny_json(action: int, name: str | None, function: str | None, *_: object) -> int:
    if action == sqlite3.SQLITE_FUNCTION and (function or "").startswith("json"):
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def test_an_sqlite_without_json_functions_is_refused_saying_so() -> None:
    conn = sqlite3.connect(":memory:")
    conn.set_authorizer(_deny_json)  # as a library built without them would answer
    try:
        with pytest.raises(duetime.ConfigError, match="lacks its JSON functions") as caught:
            check_json(conn)
    finally:
        conn.close()
    assert sqlite3.sqlite_version in str(caught.value) and "3.38" in str(caught.value)
