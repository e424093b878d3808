"""A Redis that evicts keys under memory pressure loses tasks without an error: duetime
refuses it unless told to accept the loss, and then says so in the log."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest

import duetime
import duetime.worker.upkeep
from tests.helpers import eventually, running
from tests.servers import RedisServer


@pytest.fixture(scope="module")
def lru_redis() -> Iterator[RedisServer]:
    with RedisServer("--maxmemory", "50mb", "--maxmemory-policy", "allkeys-lru") as server:
        yield server


async def test_an_evicting_redis_is_refused_and_nothing_is_written(
    lru_redis: RedisServer, namespace: str
) -> None:
    app = duetime.App(lru_redis.url, namespace=namespace)
    app.declare("work")
    with pytest.raises(duetime.ConfigError, match="allkeys-lru") as opening:
        await app.open()
    assert "noeviction" in str(opening.value)  # and says what to do
    with pytest.raises(duetime.ConfigError, match="allkeys-lru"):
        await app.schedule("work", "a")

    @app.task("job")
    async def job(payload: dict[str, object]) -> None:  # pragma: no cover - never runs
        raise AssertionError("ran on an evicting Redis")

    with pytest.raises(duetime.ConfigError, match="allkeys-lru"):
        await app.worker(grace=0.1).run()
    await app.close()
    client = lru_redis.client()
    try:
        assert client.keys(f"*{namespace}*") == []
    finally:
        client.close()


async def test_allow_eviction_starts_with_a_warning(
    lru_redis: RedisServer, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    app = duetime.App(lru_redis.url, namespace=namespace, allow_eviction=True)
    app.declare("work")
    try:
        with caplog.at_level(logging.WARNING):
            await app.open()
        warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert any("allkeys-lru" in r.getMessage() for r in warnings), caplog.text
        await app.schedule("work", "a", delay=60)
        assert (await app.counts("work"))["due"] == 1
    finally:
        await app.close()


async def test_a_policy_that_only_evicts_keys_with_a_ttl_is_accepted(
    namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    with RedisServer("--maxmemory", "50mb", "--maxmemory-policy", "volatile-lru") as server:
        app = duetime.App(server.url, namespace=namespace)
        app.declare("work")
        with caplog.at_level(logging.WARNING):
            await app.open()
        assert "volatile-lru" not in caplog.text
        await app.schedule("work", "a", delay=60)
        await app.close()


async def test_out_of_memory_surfaces_to_schedule_and_loses_nothing(namespace: str) -> None:
    """Under noeviction a full Redis refuses writes: schedule() raises an error that says so,
    and every schedule() that returned is in the store."""
    server = RedisServer("--maxmemory", "3mb", "--maxmemory-policy", "noeviction").start()
    client = server.client()
    app = duetime.App(server.url, namespace=namespace)
    app.declare("work")
    try:
        acked = []
        with pytest.raises(duetime.StoreError) as refused:
            for i in range(20_000):
                await app.schedule("work", f"m{i}", delay=3600, payload={"pad": "x" * 500})
                acked.append(f"m{i}")
        assert 100 < len(acked) < 20_000
        # Read without MULTI, which a full Redis refuses.
        due_key = next(k for k in client.scan_iter(f"*{namespace}*:due"))
        assert client.zcard(due_key) == len(acked)
        assert None not in client.zmscore(due_key, acked)
        # The error names the cause, not some other one.
        message = str(refused.value).lower()
        assert "memory" in message or "oom" in message, refused.value
    finally:
        client.close()
        await app.close()
        server.cleanup()


async def test_a_running_worker_reports_a_redis_switched_to_evicting(
    namespace: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The policy was fine at start; someone sets allkeys-lru while the worker runs. The
    worker reads the settings again now and then, and says so in the log as an error."""
    monkeypatch.setattr(duetime.worker.upkeep, "UPKEEP_SECONDS", 0.1)
    server = RedisServer("--maxmemory", "50mb", "--maxmemory-policy", "noeviction").start()
    client = server.client()
    app = duetime.App(server.url, namespace=namespace)

    @app.task("job")
    async def job(payload: dict[str, object]) -> None:  # pragma: no cover - never runs
        pass

    try:
        with caplog.at_level(logging.ERROR, logger="duetime.worker"):
            async with running(app, grace=0.1):
                await asyncio.sleep(0.3)
                assert "maxmemory-policy" not in caplog.text  # fine as it was
                client.config_set("maxmemory-policy", "allkeys-lru")

                def reported() -> bool:
                    return any(
                        r.levelno == logging.ERROR and "allkeys-lru" in r.getMessage()
                        for r in caplog.records
                    )

                await eventually(reported, 5)
        assert "noeviction" in caplog.text  # and says what to set
    finally:
        await app.close()
        client.close()
        server.cleanup()
