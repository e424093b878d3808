"""A store opened for reads only (``create=False``, what the CLI's read commands and the
dashboard use) does not create a SQLite file that is not there: it fails naming the path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import duetime
from duetime.errors import ConfigError
from duetime.stores import open_store


async def test_a_store_that_may_not_create_refuses_a_missing_file_by_path(
    tmp_path: Path,
) -> None:
    path = tmp_path / "typo.db"
    store = open_store(f"sqlite:///{path}", namespace="ns", create=False)
    with pytest.raises(ConfigError, match=f"no SQLite database at {path}"):
        await store.open()
    await store.close()
    assert not os.listdir(tmp_path)  # nothing made: no file, no WAL, no journal


async def test_a_store_that_may_not_create_opens_a_file_that_exists(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tasks.db'}"
    async with duetime.App(url, namespace="ns") as app:  # a producer creates it
        app.declare("mail")
        await app.schedule("mail", "m1", delay=60)
    reader = duetime.App(url, namespace="ns")
    reader.declare("mail")
    reader.open_existing()
    async with reader:
        info = await reader.get("mail", "m1")
        assert info is not None and info.state == "due"


async def test_an_app_told_to_open_only_an_existing_store_does_not_create_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "typo.db"
    app = duetime.App(f"sqlite:///{path}")
    app.declare("mail")
    assert app.url  # the store object made already: made again, not to create
    app.open_existing()
    with pytest.raises(ConfigError, match="does not exist"):
        await app.get("mail", "m1")
    assert not path.exists()
