"""Expiring entries on each store: handled once at expiry with their last value, keep_ttl and
restarts, get, expires_at, delete, expiries missed while no worker ran, dead letters."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

import duetime
from duetime.features.expiring.group import ExpiringGroup
from duetime.testing import harness
from tests.helpers import count_is, eventually, has_state, is_gone, running

TTL = timedelta(milliseconds=300)
FAST = duetime.Backoff(base=timedelta(milliseconds=20), jitter=0)


def handled_log(group: ExpiringGroup) -> list[tuple[str, Any, duetime.Context]]:
    """Register a handler that notes each expiry it is given."""
    seen: list[tuple[str, Any, duetime.Context]] = []

    @group.on_expire
    async def persist(key: str, value: Any, ctx: duetime.Context) -> None:
        seen.append((key, value, ctx))

    return seen


async def test_an_entry_is_handled_once_at_its_expiry_with_its_last_value(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    cache = app.expiring("pendingWrites", ttl=TTL)
    seen = handled_log(cache)

    async with harness(app, url=store_url) as h:
        first = await cache.put("user:42", {"clicks": 3})
        assert await cache.get("user:42") == {"clicks": 3}
        assert await cache.expires_at("user:42") == first
        h.advance(0.1)
        later = await cache.put("user:42", {"clicks": 4})  # restarts the TTL
        assert later == first + timedelta(milliseconds=100)
        h.advance(TTL - timedelta(milliseconds=1))
        await h.run_due()
        assert seen == []  # the first expiry has passed, and was restarted
        h.advance(timedelta(milliseconds=1))
        await h.run_due()
        assert len(seen) == 1
        h.advance(3600)
        await h.run_due()  # nothing more

        ((key, value, ctx),) = seen
        expiry_ms = int(later.timestamp() * 1000)
        assert (key, value) == ("user:42", {"clicks": 4})
        assert ctx.task_type == "pendingWrites" and ctx.due == later and ctx.attempt == 1
        assert ctx.occurrence == f"user:42@{expiry_ms}" == ctx.task_id
        assert await cache.get("user:42") is None and await cache.expires_at("user:42") is None
        assert await app.counts("pendingWrites") == {"due": 0, "running": 0, "dead": 0}


async def test_keep_ttl_keeps_a_live_expiry_and_starts_one_when_there_is_none(
    app: duetime.App,
) -> None:
    cache = app.expiring("reminders", ttl=timedelta(minutes=5))
    first = await cache.put("a", 1, ttl=timedelta(minutes=1))
    kept = await cache.put("a", 2, keep_ttl=True)
    fresh = await cache.put("b", [1, 2], keep_ttl=True)  # none live: the group's TTL

    assert kept == first and await cache.get("a") == 2
    now = await app.now_ms()
    assert 299_000 <= int(fresh.timestamp() * 1000) - now <= 300_000
    restarted = await cache.put("a", 3, ttl=timedelta(minutes=2))
    assert restarted > first and await cache.expires_at("a") == restarted


async def test_delete_removes_a_live_entry_and_leaves_an_expired_one_to_its_handler(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    cache = app.expiring("pendingWrites", ttl=TTL)
    seen = handled_log(cache)
    async with harness(app, url=store_url) as h:
        await cache.put("gone", "x", ttl=timedelta(minutes=1))
        await cache.put("due", "y", ttl=timedelta(milliseconds=10))
        h.advance(0.05)  # "due" has expired; no worker has handled it yet

        assert await cache.delete("gone") is True
        assert await cache.delete("gone") is False
        assert await cache.delete("due") is False  # expired: still goes to the handler
        assert await cache.get("due") is None
        await h.run_due()
        h.advance(120)
        await h.run_due()
    assert [(k, v) for k, v, _ in seen] == [("due", "y")]


async def test_a_put_after_expiry_starts_a_new_entry_and_the_old_value_is_still_handled(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    cache = app.expiring("pendingWrites", ttl=timedelta(milliseconds=50))
    seen = handled_log(cache)
    async with harness(app, url=store_url) as h:
        await cache.put("k", "old")
        h.advance(0.1)  # expired while no worker ran
        await cache.put("k", "new", ttl=timedelta(milliseconds=400))

        assert await cache.get("k") == "new"
        await h.run_due()
        assert [v for _, v, _ in seen] == ["old"]  # at once: its expiry has passed
        h.advance(0.399)
        await h.run_due()
        assert len(seen) == 1
        h.advance(0.001)
        await h.run_due()
    assert [(k, v) for k, v, _ in seen] == [("k", "old"), ("k", "new")]


async def test_entries_that_expired_while_no_worker_ran_are_handled_when_one_starts(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    cache = app.expiring("pendingWrites", ttl=timedelta(milliseconds=20))
    seen = handled_log(cache)
    async with harness(app, url=store_url) as h:
        await cache.put_many({f"k{i}": i for i in range(50)})
        h.advance(0.1)
        await h.run_due()
        h.advance(3600)
        await h.run_due()
    assert sorted(v for _, v, _ in seen) == list(range(50))


async def test_an_expiry_that_keeps_failing_ends_in_the_dead_letters_with_its_value(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    cache = app.expiring("flaky", ttl=timedelta(milliseconds=20), retries=1, backoff=FAST)
    attempts: list[int] = []

    @cache.on_expire
    def refuse(key: str, value: Any, ctx: duetime.Context) -> None:  # a plain def
        attempts.append(ctx.attempt)
        raise ConnectionError("database down")

    async with harness(app, url=store_url) as h:
        due = await cache.put("order:7", {"total": 12})
        dead_id = f"order:7@{int(due.timestamp() * 1000)}"
        h.advance(0.02)
        await h.run_due()
        assert attempts == [1] and not await has_state(app, "flaky", dead_id, "dead")
        h.advance(0.02)  # the back-off
        await h.run_due()
        assert attempts == [1, 2] and await has_state(app, "flaky", dead_id, "dead")

        (dead,) = await app.list("flaky", "dead")
        assert dead.payload == {"key": "order:7", "value": {"total": 12}}
        assert dead.error == "ConnectionError: database down"
        attempts.clear()
        await app.retry("flaky", dead_id)
        await h.run_due()
        h.advance(0.02)
        await h.run_due()
        assert attempts == [1, 2] and await has_state(app, "flaky", dead_id, "dead")


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda c: c.put("k", 1, ttl=0), "ttl"),
        (lambda c: c.put("k", 1, ttl=timedelta(seconds=-1)), "ttl"),
        (lambda c: c.put("", 1), "key"),
        (lambda c: c.put("x" * 201, 1), "key"),
        (lambda c: c.put("k", {1, 2}), "value"),
        (lambda c: c.put("k", float("nan")), "value"),
        (lambda c: c.put("k", "x" * 70_000), "value"),
        (lambda c: c.put_many([("k", 1), ("k", 2)]), "key"),
        (lambda c: c.put("k@1700000000000", 1), "key"),
        (lambda c: c.put_many([("k", 1), ("k@5", 2)]), "key"),
        (lambda c: c.put("k", 1, ttl=timedelta(days=8000 * 365)), "ttl"),
        (lambda c: c.put("k", 1, ttl=timedelta(days=8000 * 365), keep_ttl=True), "ttl"),
        (lambda c: c.put_many({"k": 1, "l": 2}, ttl=timedelta(days=8000 * 365)), "ttl"),
        (lambda c: c.get("k@5"), "key"),
        (lambda c: c.expires_at("k@5"), "key"),
        (lambda c: c.delete("k@5"), "key"),
    ],
)
async def test_bad_input_is_refused_by_name_and_nothing_is_written(
    app: duetime.App, call: Any, field: str
) -> None:
    cache = app.expiring("cache", ttl=TTL)
    with pytest.raises(duetime.ValidationError) as caught:
        await call(cache)
    assert caught.value.field == field
    assert await app.counts("cache") == {"due": 0, "running": 0, "dead": 0}


def test_a_group_name_must_be_free_and_its_handler_take_a_key_and_a_value() -> None:
    app = duetime.App("redis://localhost:1/0")

    @app.task("job")
    async def job(payload: dict[str, Any]) -> None: ...

    with pytest.raises(duetime.ValidationError, match="already"):
        app.expiring("job", ttl=1)
    cache = app.expiring("cache", ttl=1)
    with pytest.raises(duetime.ValidationError, match="already registered to an expiring group"):
        app.expiring("cache", ttl=1)
    app.declare("sessions")  # a name only declared may still be a group's
    assert app.expiring("sessions", ttl=1).name == "sessions"
    with pytest.raises(duetime.ValidationError, match="already registered"):

        @app.task("cache")
        async def clash(payload: dict[str, Any]) -> None: ...

    with pytest.raises(duetime.ValidationError, match=r"\(key, value\)"):

        @cache.on_expire
        async def one(key: str) -> None: ...

    with pytest.raises(duetime.ValidationError, match="ttl"):
        app.expiring("other", ttl=0)


async def test_a_deleted_entry_is_never_handled(store_url: str, namespace: str) -> None:
    app = duetime.App(namespace=namespace)
    cache = app.expiring("pendingWrites", ttl=timedelta(milliseconds=200))
    seen = handled_log(cache)
    async with harness(app, url=store_url) as h:
        await cache.put("k", 1)
        assert await cache.delete("k") is True
        h.advance(0.4)
        assert await h.run_due() == []
        assert seen == []
        assert await is_gone(app, "pendingWrites", "k")


async def test_a_ttl_past_the_year_9999_is_refused_and_nothing_is_written(
    app: duetime.App,
) -> None:
    eons = app.expiring("eons", ttl=timedelta(days=7990 * 365))
    with pytest.raises(duetime.ValidationError, match="9999") as caught:
        await eons.put("k", 1)
    assert caught.value.field == "ttl"
    with pytest.raises(duetime.ValidationError) as caught:
        await eons.put("k", 1, keep_ttl=True)
    assert caught.value.field == "ttl"
    assert await app.counts("eons") == {"due": 0, "running": 0, "dead": 0}
    assert await eons.get("k") is None and await eons.expires_at("k") is None
    assert await app.list("eons") == []


async def test_no_key_can_take_the_id_of_another_keys_expiry(app: duetime.App) -> None:
    """An entry keyed ``"<key>@<expiry ms>"`` would be the task ``<key>``'s expiry becomes:
    it cannot be written, and the expired value reaches the handler."""
    cache = app.expiring("pendingWrites", ttl=TTL)
    seen = handled_log(cache)
    due = await cache.put("user:42", {"clicks": 3})
    expiry_id = f"user:42@{int(due.timestamp() * 1000)}"
    with pytest.raises(duetime.ValidationError, match="reserved") as caught:
        await cache.put(expiry_id, {"clicks": 99}, ttl=timedelta(hours=1))
    assert caught.value.field == "key"

    async with running(app):
        await eventually(lambda: len(seen) == 1)
        await eventually(lambda: count_is(app, "pendingWrites", "due", 0), what="nothing left")
    # The worker stopped: it ran what it claimed, and nothing is left to claim.
    ((key, value, ctx),) = seen
    assert (key, value, ctx.task_id) == ("user:42", {"clicks": 3}, expiry_id)
    assert await app.counts("pendingWrites") == {"due": 0, "running": 0, "dead": 0}
