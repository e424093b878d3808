"""The contract suite runs, unchanged, against every store: each test gets an App on each."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

import duetime
from tests.postgres import fresh_schema
from tests.scripts_arity import check_calls
from tests.servers import RedisCluster, RedisServer, SentinelGroup

STORES = ("redis", "sqlite", "sentinel", "cluster", "postgres")


@pytest.fixture(scope="session")
def shared_postgres_url() -> Iterator[str]:
    """One schema for the contract tests of a test process, dropped at its end: each test
    works in a namespace of its own (the ``namespace`` fixture, or the harness's), which
    keeps its tasks, schedules and counts apart, as it does on the Redis stores' shared
    servers. A fresh schema per test ran the migrations every time, most of a contract
    test's time on PostgreSQL."""
    with fresh_schema() as url:
        yield url


@pytest.fixture(params=STORES)
def store_url(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> str:
    if request.param in ("redis", "sentinel", "cluster"):
        check_calls(monkeypatch)  # every script call against its header's KEYS and ARGV
    if request.param == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        return server.url
    if request.param == "sentinel":
        group: SentinelGroup = request.getfixturevalue("sentinel_group")
        return group.sentinel_url
    if request.param == "cluster":
        cluster: RedisCluster = request.getfixturevalue("redis_cluster")
        return cluster.cluster_url
    if request.param == "postgres":
        return str(request.getfixturevalue("shared_postgres_url"))
    return f"sqlite:///{tmp_path / 'duetime.db'}"


@pytest.fixture
async def app(store_url: str, namespace: str) -> AsyncIterator[duetime.App]:
    app = duetime.App(store_url, namespace=namespace)
    app.declare("mail", "report")
    await app.open()
    yield app
    await app.close()


@pytest.fixture
async def store(app: duetime.App) -> duetime.stores.base.Store:
    return await app.open()
