"""Fixtures: a redis-server of the session's own, a fresh namespace per test, apps."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

import duetime
from tests.servers import RedisServer


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    return redis_server.url


@pytest.fixture
def namespace() -> str:
    return "t" + uuid.uuid4().hex[:12]


@pytest.fixture
async def redis_app(redis_url: str, namespace: str) -> AsyncIterator[duetime.App]:
    app = duetime.App(redis_url, namespace=namespace)
    yield app
    await app.close()
