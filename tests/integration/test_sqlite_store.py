"""SQLite-only behaviour: URLs, schema versions, bad files, durability, locks, processes, wakes."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import duetime
from duetime.stores.base import NewTask, Outcome
from duetime.stores.sqlite import schema
from duetime.stores.sqlite.config import DEFAULT_BUSY_TIMEOUT_MS, parse_sqlite_url
from duetime.stores.sqlite.connection import Database
from duetime.stores.sqlite.ops import SCHEDULE_ROWS
from duetime.stores.sqlite.store import SqliteStore
from tests.helpers import record_text

ROOT = Path(__file__).resolve().parents[2]
T0 = 1_900_000_000_000  # in 2030: a manual clock, never this machine's
PAST = 1_000_000_000_000  # in 2001: due by this machine's clock
REC = record_text("{}")


def url_of(path: Path, query: str = "") -> str:
    return f"sqlite:///{path}" + (f"?{query}" if query else "")


def make_store(path: Path, namespace: str = "ns", query: str = "") -> SqliteStore:
    return SqliteStore(parse_sqlite_url(url_of(path, query), namespace=namespace))


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    store = make_store(tmp_path / "duetime.db")
    await store.open()
    yield store
    await store.close()


def versions(path: Path) -> list[int]:
    conn = sqlite3.connect(path)
    try:
        return [row[0] for row in conn.execute("SELECT version FROM duetime_schema ORDER BY 1")]
    finally:
        conn.close()


# -- URLs -------------------------------------------------------------------------------


def test_a_url_with_three_slashes_is_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = parse_sqlite_url("sqlite:///data/tasks.db", namespace="ns")
    assert config.path == tmp_path / "data" / "tasks.db"
    assert (config.namespace, config.synchronous) == ("ns", "full")
    assert config.busy_timeout_ms == DEFAULT_BUSY_TIMEOUT_MS


def test_a_url_with_four_slashes_is_absolute_and_takes_options() -> None:
    config = parse_sqlite_url(
        "sqlite:////var/lib/x.db?synchronous=NORMAL&busy_timeout_ms=250", namespace="ns"
    )
    assert config.path == Path("/var/lib/x.db")
    assert (config.synchronous, config.busy_timeout_ms) == ("normal", 250)


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("sqlite://host/x.db", "host"),
        ("sqlite://", "no file path"),
        ("sqlite:///", "no file path"),
        ("sqlite:///:memory:", "in-memory"),
        ("sqlite:///dir/", "directory"),
        ("sqlite:///x.db?journal=wal", "'journal'"),
        ("sqlite:///x.db?synchronous=off", "synchronous=off"),
        ("sqlite:///x.db?synchronous=fast", "synchronous='fast'"),
        ("sqlite:///x.db?busy_timeout_ms=soon", "busy_timeout_ms='soon'"),
        ("sqlite:///x.db?busy_timeout_ms=-1", "busy_timeout_ms=-1"),
        ("sqlite:///x.db?synchronous=full&synchronous=normal", "given twice"),
        ("redis:///x.db", "not a SQLite URL"),
    ],
)
def test_a_bad_url_or_option_is_refused_by_name(url: str, named: str) -> None:
    with pytest.raises(duetime.ConfigError, match=None) as caught:
        parse_sqlite_url(url, namespace="ns")
    assert named in str(caught.value)


# -- schema versions ----------------------------------------------------------------------


async def test_a_new_file_gets_every_migration(store: SqliteStore, tmp_path: Path) -> None:
    assert versions(tmp_path / "duetime.db") == [m.version for m in schema.MIGRATIONS]
    conn = sqlite3.connect(tmp_path / "duetime.db")
    try:
        (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
    finally:
        conn.close()
    assert mode == "wal"


async def test_a_file_of_an_older_version_is_migrated_and_keeps_its_tasks(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    # A file as the first version of duetime wrote it, made by hand: migration 1 only.
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    for statement in schema.statements(schema.MIGRATIONS[0].sql):
        conn.execute(statement)
    conn.execute("INSERT INTO duetime_schema VALUES (1, 'initial', 0)")
    conn.execute("INSERT INTO duetime_queues (qid, namespace, type) VALUES (7, 'ns', 'mail')")
    conn.execute(
        "INSERT INTO duetime_tasks (qid, id, due_ms, record) VALUES (7, 'a', ?, ?)", (T0, REC)
    )
    conn.execute("COMMIT")
    conn.close()
    assert schema.LATEST > 1, "this test needs a second migration to apply"

    store = make_store(path)
    await store.open()
    try:
        task = await store.get("mail", "a")
        assert await store.add_schedule_name("nightly", "mail") == "mail"  # 0002's table
    finally:
        await store.close()

    assert task is not None and (task.state, task.due_ms, task.record) == ("due", T0, REC)
    assert versions(path) == list(range(1, schema.LATEST + 1))


async def test_a_file_of_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    store = make_store(path)
    await store.open()
    await store.schedule("mail", [NewTask("a", T0, REC)])
    await store.close()
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "INSERT INTO duetime_schema VALUES (?, 'from_the_future', 0)", (schema.LATEST + 1,)
        )
    conn.close()

    with pytest.raises(duetime.SchemaError) as caught:
        await make_store(path).open()

    message = str(caught.value)
    assert str(path) in message and "newer duetime" in message
    assert f"version {schema.LATEST + 1}" in message


async def test_migrations_apply_together_or_not_at_all(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    first = make_store(path)
    await first.open()  # brings the file to the latest version
    await first.close()
    extra = tmp_path / "migrations"
    extra.mkdir()
    for m in schema.MIGRATIONS:
        (extra / f"{m.version:04d}_{m.name}.sql").write_text(m.sql)
    n = schema.LATEST
    (extra / f"{n + 1:04d}_notes.sql").write_text(
        "-- adds a column; a semicolon in a comment; does not split\n"
        "ALTER TABLE duetime_tasks ADD COLUMN note TEXT DEFAULT 'a;b';\n"
        "CREATE TABLE duetime_notes (x);\n"
    )
    (extra / f"{n + 2:04d}_broken.sql").write_text(
        "CREATE TABLE duetime_more (x);\nCREATE TABLE duetime_notes (x);\n"
    )
    db = Database.open(parse_sqlite_url(url_of(path), namespace="ns"))
    try:
        with pytest.raises(duetime.SchemaError, match="_broken failed .*already exists"):
            db.write(schema.migrate, path, schema.load_migrations(extra))
        assert versions(path) == list(range(1, n + 1))
        tables = {r[0] for r in db.conn.execute("SELECT name FROM sqlite_master")}
        assert not {"duetime_notes", "duetime_more"} & tables

        (extra / f"{n + 2:04d}_broken.sql").unlink()
        assert db.write(schema.migrate, path, schema.load_migrations(extra)) == n
        assert versions(path) == list(range(1, n + 2))
        columns = [r[1] for r in db.conn.execute("PRAGMA table_info(duetime_tasks)")]
        assert "note" in columns
    finally:
        db.close()


async def test_a_file_with_other_applications_tables_is_initialised_beside_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "shared.db"
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE invoices (n INTEGER)")
        conn.execute("INSERT INTO invoices VALUES (42)")
    conn.close()

    store = make_store(path)
    await store.open()
    await store.schedule("mail", [NewTask("a", T0, REC)])
    await store.close()

    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT n FROM invoices").fetchall() == [(42,)]
    finally:
        conn.close()
    assert versions(path)[-1] == schema.LATEST


# -- files that cannot be used --------------------------------------------------------------


async def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("shopping list: eggs, milk, flour\n" * 100)

    with pytest.raises(duetime.SchemaError) as caught:
        await make_store(path).open()

    assert str(path) in str(caught.value)
    assert "not a duetime database" in str(caught.value)
    assert path.read_text().startswith("shopping list")  # left as it was


async def test_an_unreadable_file_is_refused_naming_it(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        path = tmp_path / "locked.db"
        store = make_store(path)
        await store.open()
        await store.close()
        path.chmod(0)
        expected = "Permission denied"
    else:
        # Root reads and writes a file whatever its mode bits, so chmod proves nothing here;
        # a file in /proc is one that root too cannot use as a database.
        path = Path("/proc/version")
        expected = "cannot"

    with pytest.raises(duetime.ConfigError) as caught:
        await make_store(path).open()

    assert str(path) in str(caught.value) and expected in str(caught.value)


async def test_a_read_only_directory_is_refused_naming_the_path(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o555)
        path = folder / "duetime.db"
    else:
        # Root may create files in any directory whatever its mode bits, but not in /proc.
        path = Path(f"/proc/duetime-{uuid.uuid4().hex}.db")

    with pytest.raises(duetime.ConfigError) as caught:
        await make_store(path).open()

    assert str(path) in str(caught.value) and "cannot be created" in str(caught.value)
    assert not path.exists()


@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        ("a-file/duetime.db", "not a directory"),
        ("missing/duetime.db", "does not exist"),
        ("a-dir", "is a directory"),
    ],
)
async def test_a_path_that_cannot_hold_a_database_is_refused(
    tmp_path: Path, relative: str, expected: str
) -> None:
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "a-dir").mkdir()
    path = tmp_path / relative

    with pytest.raises(duetime.ConfigError) as caught:
        await make_store(path).open()

    assert str(path) in str(caught.value) and expected in str(caught.value)


# -- durability ---------------------------------------------------------------------------


async def _synchronous(store: SqliteStore) -> int:
    def read(db: Database) -> int:
        return int(db.conn.execute("PRAGMA synchronous").fetchone()[0])

    return await store._on_thread("test", read)


async def test_synchronous_is_full_by_default_without_warnings(store: SqliteStore) -> None:
    assert await _synchronous(store) == 2  # FULL
    assert store.durability_warnings() == []


async def test_synchronous_normal_is_faster_and_says_what_it_may_lose(tmp_path: Path) -> None:
    store = make_store(tmp_path / "fast.db", query="synchronous=normal")
    await store.open()
    try:
        assert await _synchronous(store) == 1  # NORMAL
        (warning,) = store.durability_warnings()
    finally:
        await store.close()
    assert "synchronous=normal" in warning and "power cut" in warning
    assert "synchronous=full" in warning


async def test_a_batch_that_fails_midway_writes_nothing(store: SqliteStore, tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "duetime.db")
    with conn:
        conn.execute(
            "CREATE TRIGGER poison BEFORE INSERT ON duetime_tasks WHEN NEW.id = 'poison' "
            "BEGIN SELECT RAISE(ABORT, 'poisoned'); END"
        )
    conn.close()
    batch = [NewTask("a", T0, REC), NewTask("b", T0, REC), NewTask("poison", T0, REC)]

    with pytest.raises(duetime.StoreError, match="poisoned"):
        await store.schedule("mail", batch)

    assert await store.count("mail") == {"due": 0, "running": 0, "dead": 0}


# -- locking ------------------------------------------------------------------------------


async def test_a_lock_held_too_long_is_store_unavailable_naming_the_timeout(
    tmp_path: Path,
) -> None:
    path = tmp_path / "busy.db"
    store = make_store(path, query="busy_timeout_ms=200")
    await store.open()
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        t0 = time.monotonic()
        with pytest.raises(duetime.StoreUnavailable) as caught:
            await store.schedule("mail", [NewTask("a", T0, REC)])
        waited = time.monotonic() - t0
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
        await store.close()
    assert 0.15 < waited < 2
    assert "busy_timeout_ms" in str(caught.value) and str(path) in str(caught.value)


async def test_a_write_waits_for_a_lock_held_briefly(tmp_path: Path) -> None:
    path = tmp_path / "busy.db"
    store = make_store(path)
    await store.open()
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        write = asyncio.create_task(store.schedule("mail", [NewTask("a", T0, REC)]))
        await asyncio.sleep(0.3)
        assert not write.done()
        blocker.execute("COMMIT")
        await asyncio.wait_for(write, 5)
        assert (await store.count("mail"))["due"] == 1
    finally:
        blocker.close()
        await store.close()


@pytest.mark.parametrize("n", [SCHEDULE_ROWS - 1, SCHEDULE_ROWS, 2 * SCHEDULE_ROWS + 1])
async def test_a_batch_written_many_rows_a_statement_keeps_every_task(
    store: SqliteStore, n: int
) -> None:
    tasks = [NewTask(f"t{i}", T0 + i, record_text(f'{{"i":{i}}}')) for i in range(n)]
    tasks.append(NewTask("t0", T0 - 1, REC))  # a repeated id: the last one wins

    await store.schedule("mail", tasks)

    rows = await store.list_tasks("mail", "due", n + 10)
    assert [(r.id, r.due_ms) for r in rows] == [("t0", T0 - 1)] + [
        (f"t{i}", T0 + i) for i in range(1, n)
    ]
    assert rows[0].record == REC and rows[-1].record == tasks[n - 1].record


async def test_namespaces_share_a_file_apart(tmp_path: Path) -> None:
    one, two = make_store(tmp_path / "x.db", "one"), make_store(tmp_path / "x.db", "two")
    await one.open()
    await two.open()
    try:
        await one.schedule("mail", [NewTask("a", T0, REC)])
        await two.schedule("mail", [NewTask("a", T0 + 5, REC), NewTask("b", T0, REC)])
        batch = await one.claim(
            "mail", now_ms=T0 + 10, limit=10, lease_ms=1000, max_stalls=0, at_most_once=False
        )
        assert [(c.id, c.token) for c in batch.claims] == [("a", 1)]
        assert await two.count("mail") == {"due": 2, "running": 0, "dead": 0}
        assert (await two.get("mail", "a")).due_ms == T0 + 5  # type: ignore[union-attr]
    finally:
        await one.close()
        await two.close()


# -- several processes ----------------------------------------------------------------------

CLAIMER = """
import asyncio, json, sys, time
from duetime.stores.base import NewTask, Outcome
from duetime.stores.sqlite.store import SqliteStore, parse_sqlite_url

async def main(url, name, extra):
    store = SqliteStore(parse_sqlite_url(url, namespace="ns"))
    await store.open()
    claimed, tokens, mine = [], [], [f"{name}-{i}" for i in range(extra)]
    while True:
        if mine:  # schedule a few of its own between claims, to mix writers
            batch, mine = mine[:20], mine[20:]
            now = int(time.time() * 1000)
            await store.schedule("job", [NewTask(i, now, '{"p":{}}') for i in batch])
        now = int(time.time() * 1000)
        got = await store.claim(
            "job", now_ms=now, limit=10, lease_ms=60_000, max_stalls=0, at_most_once=False
        )
        if got.claims:
            kept = await store.settle("job", [Outcome("done", c) for c in got.claims], now)
            assert all(kept), kept
            claimed += [c.id for c in got.claims]
            tokens += [c.token for c in got.claims]
        elif not mine:
            counts = await store.count("job")
            if counts["due"] == 0:
                break
    await store.close()
    print(json.dumps({"claimed": claimed, "tokens": tokens}))

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""


@pytest.mark.slow
async def test_processes_claiming_from_one_file_claim_each_task_once(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    store = make_store(path)
    await store.open()
    await store.schedule("job", [NewTask(f"t{i}", PAST, REC) for i in range(3000)])
    await store.close()

    procs = [
        await asyncio.create_subprocess_exec(
            *(sys.executable, "-c", CLAIMER, url_of(path), f"p{n}", "200"),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for n in range(3)
    ]
    try:
        done = await asyncio.wait_for(asyncio.gather(*(p.communicate() for p in procs)), 50)
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    results = [(out.decode(), err.decode()) for out, err in done]

    for proc, (_, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
        assert "locked" not in err
    outputs = [json.loads(out) for out, _ in results]
    claimed = [i for o in outputs for i in o["claimed"]]
    tokens = [t for o in outputs for t in o["tokens"]]
    expected = {f"t{i}" for i in range(3000)} | {f"p{n}-{i}" for n in range(3) for i in range(200)}
    assert len(claimed) == len(expected) and set(claimed) == expected
    assert len(set(tokens)) == len(tokens)
    assert all(len(o["claimed"]) > 0 for o in outputs)  # every process got a share


# -- wake-ups -----------------------------------------------------------------------------

WAKER = """
import asyncio, sys, time
from duetime.stores.base import NewTask
from duetime.stores.sqlite.store import SqliteStore, parse_sqlite_url

async def main(url, t0):
    store = SqliteStore(parse_sqlite_url(url, namespace="ns"))
    await store.open()
    for k in range(5):
        await asyncio.sleep(0.1)
        await store.schedule("job", [NewTask(f"w{k}", t0 - k, '{"p":{}}')])
        print(time.time(), flush=True)
    await store.close()

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


class Wakes:
    def __init__(self) -> None:
        self.seen: list[tuple[str, int, float]] = []
        self.changed = asyncio.Event()

    def __call__(self, task_type: str, due_ms: int) -> None:
        self.seen.append((task_type, due_ms, time.time()))
        self.changed.set()

    async def first(self) -> None:
        await asyncio.wait_for(self.changed.wait(), 5)
        assert self.seen[0][:2] == ("*", 0)


async def test_a_task_another_process_schedules_wakes_listen_within_50_ms(
    store: SqliteStore, tmp_path: Path
) -> None:
    wakes = Wakes()
    listener = asyncio.create_task(store.listen(wakes))
    try:
        await wakes.first()
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            WAKER,
            url_of(tmp_path / "duetime.db"),
            str(T0),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await asyncio.wait_for(proc.communicate(), 30)
        await asyncio.sleep(0.1)
    finally:
        listener.cancel()
        with pytest.raises(asyncio.CancelledError):
            await listener
    assert proc.returncode == 0
    committed = [float(line) for line in out.decode().split()]
    woken = {due: at for task_type, due, at in wakes.seen if task_type == "job"}
    assert sorted(woken) == [T0 - k for k in range(4, -1, -1)]
    latencies = [woken[T0 - k] - committed[k] for k in range(5)]
    assert max(latencies) < 0.05, latencies


async def test_a_producer_in_the_same_process_wakes_listen_at_once(
    store: SqliteStore, tmp_path: Path
) -> None:
    wakes = Wakes()
    listener = asyncio.create_task(store.listen(wakes))
    producer = make_store(tmp_path / "duetime.db")
    other_ns = make_store(tmp_path / "duetime.db", "elsewhere")
    await producer.open()
    await other_ns.open()
    try:
        await wakes.first()
        await producer.schedule("job", [NewTask("a", T0, REC)])
        await asyncio.sleep(0)  # the wake-up is handed over by call_soon_threadsafe
        await asyncio.sleep(0)
        assert wakes.seen[1:] == [("job", T0, wakes.seen[1][2])]

        # Nothing earlier, another namespace, claims and settles: no wake-ups.
        await producer.schedule("job", [NewTask("later", T0 + 1000, REC)])
        await other_ns.schedule("job", [NewTask("b", T0 - 1000, REC)])
        got = await producer.claim(
            "job", now_ms=T0, limit=1, lease_ms=60_000, max_stalls=0, at_most_once=False
        )
        await producer.settle("job", [Outcome("done", got.claims[0])], T0)
        await asyncio.sleep(0.15)  # several polls
        assert len(wakes.seen) == 2

        # A retry that comes first wakes; the poll does not deliver it a second time.
        got = await producer.claim(
            "job", now_ms=T0 + 1000, limit=1, lease_ms=60_000, max_stalls=0, at_most_once=False
        )
        await producer.settle("job", [Outcome("retry", got.claims[0], T0 + 500, REC, "x")], T0)
        await asyncio.sleep(0.15)
        assert [w[:2] for w in wakes.seen[2:]] == [("job", T0 + 500)]
    finally:
        listener.cancel()
        with pytest.raises(asyncio.CancelledError):
            await listener
        await producer.close()
        await other_ns.close()


async def test_an_app_and_a_worker_in_one_process_run_a_task_at_once(tmp_path: Path) -> None:
    url = url_of(tmp_path / "app.db")
    worker_app, producer = duetime.App(url, namespace="ns"), duetime.App(url, namespace="ns")
    ran = asyncio.Event()

    @worker_app.task("job")
    async def job(payload: dict[str, object]) -> None:
        ran.set()

    producer.declare("job")
    await producer.open()
    worker = worker_app.worker()
    runner = asyncio.create_task(worker.run())
    try:
        await asyncio.wait_for(worker.started.wait(), 5)
        await asyncio.sleep(0.1)  # the worker is asleep: nothing is due
        t0 = time.monotonic()
        await producer.schedule("job", "a")
        await asyncio.wait_for(ran.wait(), 5)
        assert time.monotonic() - t0 < 0.05
    finally:
        worker.stop()
        await asyncio.wait_for(runner, 10)
        await worker_app.close()
        await producer.close()
