"""Fixtures of the fault tests: worker processes that are always stopped, by pid."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis.asyncio as aredis

import duetime
from tests.faults.harness import Workers


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Workers]:
    group = Workers(tmp_path)
    try:
        yield group
    finally:
        group.cleanup()


@pytest.fixture
async def app(redis_url: str, namespace: str) -> AsyncIterator[duetime.App]:
    """The test's producer: an App on its Redis and namespace, declaring the type "work"
    that the worker processes run."""
    producer = duetime.App(redis_url, namespace=namespace)
    producer.declare("work")
    yield producer
    await producer.close()


@pytest.fixture
async def admin(redis_url: str) -> AsyncIterator[aredis.Redis]:
    """A plain redis-py client on the test's Redis, for what an operator would do to it."""
    client = aredis.Redis.from_url(redis_url)
    yield client
    await client.aclose()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """On failure, add the worker processes' logs to the report."""
    report = yield
    group = getattr(item, "funcargs", {}).get("workers")
    if report.when == "call" and report.failed and isinstance(group, Workers):
        group.dump_tasks()
        report.sections.append(("worker logs", group.logs()))
    return report
