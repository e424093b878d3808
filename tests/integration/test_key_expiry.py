"""Keys other programs write, expiring in a real Redis: on_key_expired and key_timer."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

import duetime
from duetime.clock import from_ms
from tests.helpers import count_is, eventually, running
from tests.servers import RedisServer

DB = 3  # a database of its own, as the key-name timer design wants


@pytest.fixture
def raw(redis_server: RedisServer) -> Iterator[redis.Redis]:
    client = redis.Redis(port=redis_server.port, db=DB)
    yield client
    client.close()


def _app(url: str, namespace: str) -> duetime.App:
    return duetime.App(url, namespace=namespace)


async def test_on_key_expired_runs_once_for_each_matching_key_across_workers(
    redis_url: str, namespace: str, raw: redis.Redis
) -> None:
    seen: list[tuple[str, str]] = []
    apps = [_app(redis_url, namespace) for _ in range(3)]
    for app in apps:

        @app.on_key_expired(f"{namespace}:session:*", db=DB, name="sessionEnded")
        async def session_ended(key: str, ctx: duetime.Context) -> None:
            seen.append((key, ctx.task_type))

    keys = [f"{namespace}:session:{i}" for i in range(20)]
    async with running(apps[0]), running(apps[1]), running(apps[2]):
        await asyncio.sleep(0.2)  # every worker listens
        for key in keys:
            raw.set(key, "x", px=100)
        raw.set(f"{namespace}:other", "x", px=100)  # matches no pattern
        await eventually(lambda: len(seen) == len(keys), 10, "every session key handled")
        await asyncio.sleep(0.5)  # and none twice
    for app in apps:
        await app.close()

    assert sorted(key for key, _ in seen) == sorted(keys)
    assert {task_type for _, task_type in seen} == {"sessionEnded"}


async def test_key_timers_written_the_source_way_run_and_bad_ones_are_filed(
    redis_url: str, namespace: str, raw: redis.Redis
) -> None:
    app = _app(redis_url, namespace)
    sent: list[Any] = []

    @app.key_timer("sendSms", db=DB)
    async def send_sms(message: Any, ctx: duetime.Context) -> None:
        sent.append(message)

    def timer(name: str, args: str) -> str:
        key = f"{uuid.uuid1().hex}:??{name}??{args}"
        with raw.pipeline(transaction=True) as multi:  # SET then EXPIRE, in one MULTI
            multi.set(key, "")
            multi.expire(key, 1)  # whole seconds, as the design writes it
            multi.execute()
        return key

    async with running(app):
        await asyncio.sleep(0.2)
        timer("sendSms", json.dumps(["+34600000000", {"text": "hi"}]))
        unknown = timer("os.system", json.dumps(["rm -rf /"]))
        broken = timer("sendSms", "[not json")

        async def filed() -> bool:
            return len(await app.list("duetime.keyTimers", "dead")) == 2

        await eventually(lambda: sent == [["+34600000000", {"text": "hi"}]], 10, "sms sent")
        await eventually(filed, 10, "the bad timers filed")
    filed_letters = await app.list("duetime.keyTimers", "dead")
    dead = {(info.payload or {}).get("key"): info.error for info in filed_letters}
    await app.close()

    assert "no key_timer handler is named 'os.system'" in str(dead[unknown])
    assert "not JSON" in str(dead[broken])


async def test_a_worker_turns_key_events_on_keeping_the_flags_already_set(
    namespace: str,
) -> None:
    with RedisServer("--notify-keyspace-events", "Kg") as server:
        app = _app(server.url, namespace)

        @app.on_key_expired("*")
        async def anything(key: str) -> None: ...

        async with running(app):
            pass
        await app.close()
        found = server.client().config_get("notify-keyspace-events")
    assert set(str(found["notify-keyspace-events"])) >= set("KgEx")


async def test_a_redis_that_refuses_config_is_logged_with_what_to_set(
    namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    with RedisServer("--rename-command", "CONFIG", "") as server:
        app = _app(server.url, namespace)

        @app.on_key_expired("*")
        async def anything(key: str) -> None: ...

        with caplog.at_level(logging.ERROR, logger="duetime"):
            async with running(app):
                pass
        await app.close()
    assert any("notify-keyspace-events" in r.getMessage() for r in caplog.records)


async def test_handlers_fire_again_after_the_subscriber_connection_is_killed(
    redis_url: str, namespace: str, raw: redis.Redis, redis_server: RedisServer
) -> None:
    app = _app(redis_url, namespace)
    seen: list[str] = []

    @app.on_key_expired(f"{namespace}:k*", db=DB)
    async def expired(key: str) -> None:
        seen.append(key)

    admin = redis_server.client()
    async with running(app):
        await asyncio.sleep(0.2)
        raw.set(f"{namespace}:k1", "x", px=50)
        await eventually(lambda: seen == [f"{namespace}:k1"], 10, "before the kill")
        assert admin.client_kill_filter(_type="pubsub") >= 1
        await asyncio.sleep(0.5)  # reconnected
        raw.set(f"{namespace}:k2", "x", px=50)
        await eventually(lambda: seen[-1:] == [f"{namespace}:k2"], 10, "after the kill")
    admin.close()
    await app.close()


def test_key_expiry_handlers_are_refused_on_sqlite(tmp_path: Path) -> None:
    app = duetime.App(f"sqlite:///{tmp_path / 'x.db'}")
    with pytest.raises(duetime.ConfigError, match="need a Redis store"):
        app.on_key_expired("session:*")
    with pytest.raises(duetime.ConfigError, match="need a Redis store"):
        app.key_timer("sendSms")


def test_bad_key_expiry_options_are_refused_by_name(redis_url: str) -> None:
    app = duetime.App(redis_url)

    def handler(key: str) -> None: ...

    calls: list[tuple[Callable[[], Any], str]] = [
        (lambda: app.on_key_expired(""), "pattern"),
        (lambda: app.on_key_expired("x", db=-1), "db"),
        (lambda: app.key_timer("bad name")(handler), "name"),
    ]
    for call, field in calls:
        with pytest.raises(duetime.ValidationError) as caught:
            call()
        assert caught.value.field == field


async def test_a_key_too_long_or_too_odd_for_an_id_gives_a_task_every_call_takes(
    redis_url: str, namespace: str, raw: redis.Redis
) -> None:
    """A key name may be of any length and hold control characters: its task's id keeps
    within what get, retry and cancel take, and the handler gets the whole key."""
    app = _app(redis_url, namespace)
    seen: list[tuple[str, str]] = []

    @app.on_key_expired(f"{namespace}:*", db=DB, name="ended", retries=0)
    async def ended(key: str, ctx: duetime.Context) -> None:
        seen.append((key, ctx.task_id))
        raise RuntimeError("to the dead letters")

    keys = {f"{namespace}:{'x' * 300}", f"{namespace}:tab\there", f"{namespace}:short"}
    async with running(app):
        await asyncio.sleep(0.2)
        for key in keys:
            raw.set(key, "x", px=50)
        await eventually(lambda: len(seen) == 3, 10, "every key handled")
        await eventually(lambda: count_is(app, "ended", "dead", 3), 5, "all dead")

    assert {key for key, _ in seen} == keys
    for key, task_id in seen:
        assert len(task_id.encode()) <= 216 and "\t" not in task_id
        assert task_id.startswith(key + "@") == (key == f"{namespace}:short")
        info = await app.get("ended", task_id)
        assert info is not None and info.state == "dead" and info.payload == {"key": key}
        await app.retry("ended", task_id, at=from_ms(await app.now_ms() + 60_000))
        assert await app.cancel("ended", task_id)
    await app.close()
