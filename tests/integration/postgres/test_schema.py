"""The PostgreSQL store's schema and connection: migrations under a lock, a newer schema
refused, settings that lose tasks reported, an unreachable server named."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from urllib.parse import quote

import psycopg
import pytest

import duetime
from duetime.errors import ConfigError, SchemaError, StoreUnavailable
from duetime.stores import open_store
from duetime.stores.postgres import schema
from tests.postgres import DATABASE, admin, fresh_schema


@pytest.fixture
def url() -> Iterator[str]:
    with fresh_schema() as schema_url:
        yield schema_url


def _schema_of(url: str) -> str:
    return url.rsplit("schema=", 1)[1]


async def test_stores_opening_at_once_migrate_once(url: str) -> None:
    stores = [open_store(url, namespace=f"n{i}") for i in range(4)]
    await asyncio.gather(*(store.open() for store in stores))
    for store in stores:
        await store.close()
    with admin(DATABASE) as conn:
        rows = conn.execute(
            f"SELECT version, name FROM {_schema_of(url)}.schema_version ORDER BY version".encode()
        ).fetchall()
    assert [r[0] for r in rows] == [m.version for m in schema.MIGRATIONS]


async def test_a_schema_from_a_newer_duetime_is_refused(url: str) -> None:
    store = open_store(url, namespace="n")
    await store.open()
    await store.close()
    with admin(DATABASE) as conn:
        conn.execute(
            f"INSERT INTO {_schema_of(url)}.schema_version VALUES (%s, 'future', 0)".encode(),
            (schema.LATEST + 1,),
        )
    again = open_store(url, namespace="n")
    with pytest.raises(SchemaError, match="newer duetime"):
        await again.open()


async def test_synchronous_commit_off_is_reported(url: str) -> None:
    options = quote("-c synchronous_commit=off")
    store = open_store(f"{url}&options={options}", namespace="n")
    await store.open()
    try:
        warnings = store.durability_warnings()
        assert any("synchronous_commit=off" in w for w in warnings), warnings
        assert await store.check_settings() == warnings
    finally:
        await store.close()
    plain = open_store(url, namespace="n")
    await plain.open()
    assert plain.durability_warnings() == []
    await plain.close()


async def test_an_unreachable_server_is_named() -> None:
    store = open_store("postgresql://postgres:secret@127.0.0.1:1/x", namespace="n")
    with pytest.raises(StoreUnavailable, match="does not answer") as caught:
        await store.open()
    assert "secret" not in str(caught.value)


async def test_store_time_is_the_database_clock(url: str) -> None:
    store = open_store(url, namespace="n")
    await store.open()
    try:
        with psycopg.connect(url.split("?")[0]) as conn:
            row = conn.execute("SELECT extract(epoch FROM clock_timestamp()) * 1000").fetchone()
        assert row is not None
        assert abs(await store.time_ms() - float(row[0])) < 1000
    finally:
        await store.close()


def test_key_expiry_handlers_are_refused_at_registration(url: str) -> None:
    app = duetime.App(url)
    with pytest.raises(ConfigError, match="Redis"):
        app.on_key_expired("k:*")(lambda key: None)
    with pytest.raises(ConfigError, match="Redis"):
        app.key_timer("timer")(lambda message: None)
