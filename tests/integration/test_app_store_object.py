"""An App given a store object behaves as one given that store's URL, for every feature:
tasks, cron, expiring groups, pollers, key expiry handlers (on Redis), the blocking client
and detached apps; and a feature the store cannot serve is refused naming both."""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import redis

import duetime
from duetime.stores import open_store
from duetime.stores.base import Store
from tests.helpers import eventually, running
from tests.servers import RedisServer

QUICK = 0.05


@pytest.fixture(params=["redis", "sqlite"])
def store_object(request: pytest.FixtureRequest, tmp_path: Path, namespace: str) -> Store:
    if request.param == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        url = server.url
    else:
        url = f"sqlite:///{tmp_path / 'given.db'}"
    return open_store(url, namespace=namespace)


async def test_every_feature_runs_on_a_given_store_object(store_object: Store) -> None:
    app = duetime.App(store=store_object)
    assert app.url == store_object.url
    ran: list[str] = []
    expired: list[tuple[str, Any]] = []
    instructions = ["i1", "i2"]

    @app.task("mail")
    async def mail(payload: dict[str, Any]) -> None:
        ran.append(f"mail:{payload['n']}")

    @app.cron("* * * * * *", name="tick")
    async def tick(ctx: duetime.Context) -> None:
        ran.append("tick")

    group = app.expiring("session", ttl=0.2)

    @group.on_expire
    async def ended(key: str, value: Any) -> None:
        expired.append((key, value))

    @app.poller("feed", delay=lambda attempt: QUICK)
    async def feed(ctx: duetime.PollContext) -> list[str]:
        return [instructions.pop(0)] if instructions else []

    @feed.handler
    async def fed(instruction: str) -> None:
        ran.append(f"fed:{instruction}")

    try:
        async with running(app):
            await app.schedule("mail", "m1", payload={"n": 1})
            await group.put("s1", {"user": 7})
            await eventually(
                lambda: {"mail:1", "tick", "fed:i1", "fed:i2"} <= set(ran) and bool(expired),
                within=10,
                what="a task, a tick, two instructions and an expiry",
            )
        assert expired == [("s1", {"user": 7})]
        assert [c.name for c in await app.crons()] == ["tick"]
        # The store the app used is the one given: it holds what was written.
        assert await store_object.get("duetime.poller.feed", "feed") is not None
    finally:
        await app.close()


def test_the_blocking_client_and_a_detached_app_use_a_store_like_the_one_given(
    store_object: Store,
) -> None:
    app = duetime.App(store=store_object)
    app.declare("mail")
    with app.sync() as client:
        client.schedule("mail", "m1", delay=timedelta(hours=1), payload={"n": 1})
        assert client.get("mail", "m1") is not None
    detached = app.detached()
    assert detached.url == store_object.url
    assert detached.store() is not store_object  # a copy, for another event loop
    assert type(detached.store()) is type(store_object)

    async def read() -> duetime.TaskInfo | None:
        try:
            return await app.get("mail", "m1")
        finally:
            await app.close()

    info = asyncio.run(read())
    assert info is not None and info.payload == {"n": 1}


@pytest.fixture
def raw(redis_server: RedisServer) -> Iterator[redis.Redis]:
    client = redis.Redis(port=redis_server.port, db=2)
    yield client
    client.close()


async def test_key_expiry_handlers_run_on_a_given_redis_store(
    redis_server: RedisServer, namespace: str, raw: redis.Redis
) -> None:
    app = duetime.App(store=open_store(redis_server.url, namespace=namespace))
    seen: list[str] = []

    @app.on_key_expired(f"{namespace}:*", db=2, name="gone")
    async def gone(key: str) -> None:
        seen.append(key)

    try:
        async with running(app):
            await asyncio.sleep(0.2)  # listening
            raw.set(f"{namespace}:k", "x", px=50)
            await eventually(lambda: seen == [f"{namespace}:k"], 10, "the expiry handled")
    finally:
        await app.close()


def test_key_expiry_handlers_on_a_given_sqlite_store_are_refused_naming_it(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    app = duetime.App(store=open_store(url, namespace="default"))
    with pytest.raises(duetime.ConfigError, match=r"need a Redis store.*x\.db.*SqliteStore"):
        app.on_key_expired("session:*")


async def test_a_store_named_later_is_checked_when_it_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DUETIME_URL", raising=False)
    app = duetime.App()  # no URL yet: DUETIME_URL is read when the store is first needed

    @app.on_key_expired("session:*")
    async def gone(key: str) -> None: ...

    monkeypatch.setenv("DUETIME_URL", f"sqlite:///{tmp_path / 'late.db'}")
    with pytest.raises(duetime.ConfigError, match=r"need a Redis store.*late\.db"):
        await app.open()
    await app.close()


async def test_duetime_url_set_after_the_app_module_is_imported_is_the_one_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DUETIME_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "lateapp.py").write_text(
        "import duetime\napp = duetime.App()\n@app.task('mail')\nasync def mail(payload): ...\n"
    )
    monkeypatch.delitem(sys.modules, "lateapp", raising=False)
    app = importlib.import_module("lateapp").app  # made before DUETIME_URL is set
    url = f"sqlite:///{tmp_path / 'set-later.db'}"
    monkeypatch.setenv("DUETIME_URL", url)  # as a test's fixture would, after the import
    try:
        await app.schedule("mail", "m1", delay=60)
        assert app.url == url
    finally:
        await app.close()
        monkeypatch.delitem(sys.modules, "lateapp", raising=False)
    assert not (tmp_path / "duetime.db").exists()
    async with duetime.App(url) as other:
        other.declare("mail")
        assert [t.task_id for t in await other.list("mail")] == ["m1"]
