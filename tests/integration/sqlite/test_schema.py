"""Schema versions and migrations, and files that cannot be used, refused naming the path."""

from __future__ import annotations

import os
import sqlite3
import uuid
from pathlib import Path

import pytest

import duetime
from duetime.stores.base import NewTask
from duetime.stores.sqlite import schema
from duetime.stores.sqlite.config import parse_sqlite_url
from duetime.stores.sqlite.connection import Database
from duetime.stores.sqlite.store import SqliteStore
from tests.integration.sqlite.support import REC, T0, make_store, url_of, versions


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
