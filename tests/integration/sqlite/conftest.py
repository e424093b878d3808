"""A SQLite store on a fresh file for each test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from duetime.stores.sqlite.store import SqliteStore
from tests.integration.sqlite.support import make_store


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    store = make_store(tmp_path / "duetime.db")
    await store.open()
    yield store
    await store.close()
