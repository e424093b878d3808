"""``unique_for`` across a restart of the store: what a finished run leaves is kept where the
store keeps its data (a Redis with an append-only file, restarted; the SQLite file and the
PostgreSQL schema, opened again by a new app)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import duetime
from tests.helpers import eventually, is_gone, running
from tests.servers import RedisServer

HOUR = timedelta(hours=1)


@pytest.fixture
def durable_redis() -> Iterator[RedisServer]:
    with RedisServer("--appendonly", "yes", "--appendfsync", "always") as server:
        yield server


@pytest.fixture(params=["redis", "sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, RedisServer | None]:
    if request.param == "redis":
        server: RedisServer = request.getfixturevalue("durable_redis")
        return server.url, server
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url")), None
    return f"sqlite:///{tmp_path / 'duetime.db'}", None


def _app(url: str, namespace: str, runs: list[str]) -> duetime.App:
    app = duetime.App(url, namespace=namespace)

    @app.task("digest")
    async def digest(payload: dict[str, Any], ctx: duetime.Context) -> None:
        runs.append(ctx.task_id)

    return app


async def test_a_finished_run_is_remembered_across_a_restart_of_the_store(
    where: tuple[str, RedisServer | None], namespace: str
) -> None:
    url, server = where
    runs: list[str] = []
    app = _app(url, namespace, runs)
    try:
        await app.schedule("digest", "u42", unique_for=HOUR)
        async with running(app):
            await eventually(lambda: is_gone(app, "digest", "u42"), what="u42 done")
    finally:
        await app.close()
    if server is not None:
        server.restart()

    again = _app(url, namespace, runs)
    try:
        assert await again.schedule("digest", "u42", unique_for=HOUR) is None
        assert await again.get("digest", "u42") is None
        assert await again.schedule("digest", "other", delay=60, unique_for=HOUR) is not None
    finally:
        await again.close()
    assert runs == ["u42"]
