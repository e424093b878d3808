"""Fixtures: a redis-server of the session's own, a fresh namespace per test, apps."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

import duetime
from tests.postgres import fresh_schema
from tests.servers import RedisCluster, RedisServer, SentinelGroup


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    return redis_server.url


@pytest.fixture(params=["redis", "sqlite"])
def redis_or_sqlite_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each test twice: on the session's redis-server, and on a fresh SQLite file."""
    if request.param == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        return server.url
    return f"sqlite:///{tmp_path / 'duetime.db'}"


@pytest.fixture(params=["redis", "sqlite", "postgres"])
def any_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each test on the three stores: the session's redis-server, a fresh SQLite file, and
    a fresh schema on the local PostgreSQL."""
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    if request.param == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        return server.url
    return f"sqlite:///{tmp_path / 'duetime.db'}"


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A schema of its own on the local PostgreSQL, dropped after the test."""
    with fresh_schema() as url:
        yield url


@pytest.fixture
def namespace() -> str:
    return "t" + uuid.uuid4().hex[:12]


@pytest.fixture
async def redis_app(redis_url: str, namespace: str) -> AsyncIterator[duetime.App]:
    app = duetime.App(redis_url, namespace=namespace)
    yield app
    await app.close()


# A cluster or a sentinel group starts only for the tests that ask for one. The session ones
# are shared: a test may write to them but must not kill, start or reshard anything; a test
# that does takes a fresh one, which is gone (processes killed, dirs removed) after it. A
# fresh one takes the class's keyword arguments from an indirect parametrization:
#   @pytest.mark.parametrize("fresh_sentinel_group", [{"server_args": (...)}], indirect=True)


def _options(request: pytest.FixtureRequest) -> dict[str, Any]:
    return dict(getattr(request, "param", None) or {})


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisCluster]:
    with RedisCluster() as cluster:
        yield cluster


@pytest.fixture
def fresh_redis_cluster(request: pytest.FixtureRequest) -> Iterator[RedisCluster]:
    with RedisCluster(**_options(request)) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def sentinel_group() -> Iterator[SentinelGroup]:
    with SentinelGroup() as group:
        yield group


@pytest.fixture
def fresh_sentinel_group(request: pytest.FixtureRequest) -> Iterator[SentinelGroup]:
    with SentinelGroup(**_options(request)) as group:
        yield group
