"""Redis-only behaviour: the Lua scripts' guards, script reloading, keys, wake-ups, checks."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aredis

import duetime
from duetime.partitions.store import PartitionedStore
from duetime.stores.base import NewTask, Outcome
from duetime.stores.redis.config import RedisConfig
from duetime.stores.redis.keys import TypeKeys, type_keys, wake_channel
from duetime.stores.redis.server import check_server
from duetime.stores.redis.store import MARKER_HORIZON_MS, RedisStore
from tests.helpers import eventually, record_text, running
from tests.hostile import RawRedis
from tests.servers import RedisServer

T0 = 1_900_000_000_000
REC = record_text("{}")


@pytest.fixture
async def raw(redis_url: str) -> AsyncIterator[aredis.Redis]:
    client = aredis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    await client.aclose()


@pytest.fixture
async def store(redis_app: duetime.App) -> RedisStore:
    redis_app.declare("mail")
    store = await redis_app.open()
    assert isinstance(store, PartitionedStore)  # the app's store, around the Redis store
    assert isinstance(store.inner, RedisStore)
    return store.inner


async def test_a_key_of_the_wrong_type_is_refused_before_anything_is_written(
    store: RedisStore, raw: aredis.Redis, namespace: str
) -> None:
    keys = type_keys(namespace, "mail")
    await raw.set(keys.dead, "not a sorted set")

    with pytest.raises(duetime.ScriptError) as caught:
        await store.schedule("mail", [NewTask("a", T0, REC)])

    assert caught.value.key == keys.dead
    assert await raw.exists(keys.due, keys.data) == 0


async def test_claim_checks_every_key_first(
    store: RedisStore, raw: aredis.Redis, namespace: str
) -> None:
    keys = type_keys(namespace, "mail")
    await store.schedule("mail", [NewTask("a", T0, REC)])
    await raw.set(keys.running, "oops")

    with pytest.raises(duetime.ScriptError) as caught:
        await store.claim(
            "mail", now_ms=T0, limit=10, lease_ms=1000, max_stalls=1, at_most_once=False
        )

    assert caught.value.key == keys.running
    assert await raw.zrange(keys.due, 0, -1) == ["a"]  # still due, not half-claimed


async def test_a_due_id_without_a_record_is_moved_aside_not_dropped(
    store: RedisStore, raw: aredis.Redis, namespace: str
) -> None:
    keys = type_keys(namespace, "mail")
    await store.schedule("mail", [NewTask("good", T0, REC)])
    await raw.zadd(keys.due, {"orphan": T0 - 1})

    batch = await store.claim(
        "mail", now_ms=T0, limit=10, lease_ms=1000, max_stalls=1, at_most_once=False
    )

    assert [c.id for c in batch.claims] == ["good"]
    orphan = await store.get("mail", "orphan")
    assert orphan is not None and orphan.state == "dead" and orphan.record is None
    assert orphan.error is not None and "no record" in orphan.error


async def test_scripts_are_reloaded_after_the_server_forgets_them(
    store: RedisStore, raw: aredis.Redis
) -> None:
    await store.schedule("mail", [NewTask("a", T0, REC)])
    await raw.script_flush()

    await store.schedule("mail", [NewTask("b", T0, REC)])
    batch = await store.claim(
        "mail", now_ms=T0, limit=10, lease_ms=1000, max_stalls=1, at_most_once=False
    )
    assert sorted(c.id for c in batch.claims) == ["a", "b"]


async def test_every_key_is_named_after_its_type(
    store: RedisStore, raw: aredis.Redis, namespace: str
) -> None:
    await store.schedule("mail", [NewTask("a", T0, REC)])
    (claim,) = (
        await store.claim(
            "mail", now_ms=T0, limit=1, lease_ms=1000, max_stalls=1, at_most_once=False
        )
    ).claims
    await store.settle("mail", [Outcome("retry", claim, T0 + 1, REC, "boom")], T0)

    names = {key async for key in raw.scan_iter(match=f"duetime:{{{namespace}:*")}
    calls = {name for name in names if ":call:" in name}  # remembered calls, short-lived
    assert calls and all([0 < await raw.pttl(name) <= 60_000 for name in calls])
    assert names - calls == {
        f"duetime:{{{namespace}:mail}}:{kind}" for kind in ("due", "data", "lease", "meta", "seq")
    }


async def test_the_lease_hash_stays_a_hash_table(
    store: RedisStore, raw: aredis.Redis, namespace: str
) -> None:
    # A small hash of short values is a listpack, where bulk writes cost O(n) per field.
    await store.schedule("mail", [NewTask(f"t{i}", T0, REC) for i in range(5)])
    claims = (
        await store.claim(
            "mail", now_ms=T0, limit=5, lease_ms=1000, max_stalls=1, at_most_once=False
        )
    ).claims
    await store.settle("mail", [Outcome("done", c) for c in claims], T0)

    assert await raw.object("encoding", type_keys(namespace, "mail").lease) == "hashtable"


async def test_workers_are_woken_only_by_a_new_earliest_task(
    store: RedisStore, raw: aredis.Redis, namespace: str
) -> None:
    pubsub = raw.pubsub(ignore_subscribe_messages=True)
    await pubsub.subscribe(wake_channel(namespace))
    try:
        await store.schedule("mail", [NewTask("first", T0, REC)])
        await store.schedule("mail", [NewTask("later", T0 + 5, REC)])
        await store.schedule("mail", [NewTask("earlier", T0 - 5, REC)])
        messages = []
        deadline = asyncio.get_running_loop().time() + 0.5
        while asyncio.get_running_loop().time() < deadline:
            # None also stands for an ignored subscribe confirmation: keep reading.
            msg = await pubsub.get_message(timeout=0.1)
            if msg is not None:
                messages.append(msg["data"])
    finally:
        await pubsub.aclose()
    assert messages == [f"mail {T0}", f"mail {T0 - 5}"]


async def test_listen_reports_wake_ups_and_looks_again_after_a_reconnect(
    store: RedisStore, raw: aredis.Redis
) -> None:
    seen: list[tuple[str, int]] = []
    listener = asyncio.create_task(store.listen(lambda t, ms: seen.append((t, ms))))
    try:
        await eventually(lambda: ("*", 0) in seen)
        await store.schedule("mail", [NewTask("a", T0, REC)])
        await eventually(lambda: ("mail", T0) in seen)
        seen.clear()
        await raw.client_kill_filter(_type="pubsub")
        await eventually(lambda: ("*", 0) in seen)
        await store.schedule("mail", [NewTask("b", T0 - 1, REC)])
        await eventually(lambda: ("mail", T0 - 1) in seen)
    finally:
        listener.cancel()
        with pytest.raises(asyncio.CancelledError):
            await listener


def schedule_keys(k: TypeKeys) -> list[str]:
    """The schedule script's keys before its call key."""
    return [k.due, k.data, k.dead, k.meta, k.fence, k.order, k.lane, k.group, k.groups, k.ready]


def test_an_evicting_or_old_server_is_refused() -> None:
    with pytest.raises(duetime.ConfigError, match="allkeys-lru"):
        check_server({"redis_version": "7.0.15", "maxmemory_policy": "allkeys-lru"}, False)
    with pytest.raises(duetime.ConfigError, match="6.2 or newer"):
        check_server({"redis_version": "6.0.9", "maxmemory_policy": "noeviction"}, False)
    assert (
        check_server(
            {"redis_version": "7.2.4", "maxmemory_policy": "volatile-lru", "aof_enabled": 1}, False
        )
        == []
    )


async def test_a_server_without_an_append_only_file_is_warned_about(
    redis_url: str, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    app = duetime.App(redis_url, namespace=namespace)

    @app.task("t")
    async def handler(payload: dict[str, object]) -> None: ...

    caplog.set_level(logging.WARNING, logger="duetime")
    async with running(app):
        pass
    await app.close()
    assert any("append-only file" in r.getMessage() for r in caplog.records)


async def test_with_appendfsync_always_nothing_is_warned_about(namespace: str) -> None:
    with RedisServer("--appendonly", "yes", "--appendfsync", "always") as server:
        store = RedisStore(RedisConfig(url=server.url, namespace=namespace))
        await store.open()
        assert store.durability_warnings() == []
        await store.close()


async def test_a_bad_url_is_a_config_error() -> None:
    with pytest.raises(duetime.ConfigError):
        await duetime.App("redis://:bad:port:x/0").open()
    with pytest.raises(duetime.ConfigError, match="unknown store URL scheme"):
        await duetime.App("mongodb://x").open()


async def test_an_unreachable_redis_is_store_unavailable(namespace: str) -> None:
    from tests.servers import free_port

    app = duetime.App(f"redis://127.0.0.1:{free_port()}/0", namespace=namespace)
    with pytest.raises(duetime.StoreUnavailable):
        await app.open()


async def test_a_resent_claim_returns_the_same_claims(store: RedisStore, namespace: str) -> None:
    from duetime.stores.redis.keys import call_key

    k = type_keys(namespace, "mail")
    await store.schedule("mail", [NewTask(f"t{i}", T0, REC) for i in range(3)])
    keys = [k.due, k.running, k.data, k.lease, k.meta, k.dead, k.seq, call_key(k, "c1"), k.gate]
    keys += (k.order, k.lane, k.group, k.groups, k.ready, k.pace)
    args = [T0, 2, 1000, 1, "0", 0, 15_000]

    first = await store._run("claim_due", keys, args)
    again = await store._run("claim_due", keys, args)  # as if the first reply was lost

    assert again == first and len(first) == 3 + 2 * 6  # next, reaped, open; two claims
    rest = await store.claim(
        "mail", now_ms=T0, limit=10, lease_ms=1000, max_stalls=1, at_most_once=False
    )
    assert [c.id for c in rest.claims] == ["t2"]


async def test_a_resent_settle_answers_as_the_first_send_did(
    store: RedisStore, namespace: str
) -> None:
    """The second send finds the first's answers (kept for a resend), instead of reporting
    the outcomes it kept as lost leases."""
    from duetime.stores.redis.keys import call_key

    k = type_keys(namespace, "mail")
    await store.schedule("mail", [NewTask(f"t{i}", T0, REC) for i in range(2)])
    claimed = await store.claim(
        "mail", now_ms=T0, limit=2, lease_ms=1000, max_stalls=1, at_most_once=False
    )
    keys = [k.due, k.running, k.data, k.lease, k.meta, k.dead, call_key(k, "s1"), k.gate]
    keys += (k.order, k.lane, k.group, k.groups, k.ready)
    lines = "\n".join(f"{c.token}|{c.id}" for c in claimed.claims)
    args = [T0, f"duetime:{{{namespace}}}:wake", "mail", 15_000, "done*", lines]

    first = await store._run("settle", keys, args)
    again = await store._run("settle", keys, args)  # as if the first reply was lost

    assert first == again == [1, 1]
    assert await store.get("mail", "t0") is None


async def _markers(raw: aredis.Redis, namespace: str) -> list[str]:
    return [name async for name in raw.scan_iter(match=f"duetime:{{{namespace}:mail}}:call:*")]


async def test_only_a_call_with_a_task_due_soon_leaves_a_resend_marker(
    store: RedisStore, raw: aredis.Redis, namespace: str
) -> None:
    """Markers are for tasks due within a minute: a call whose tasks are all due beyond
    MARKER_HORIZON_MS by the server's clock leaves none, one call or a batch."""
    now = int(await store.time_ms())
    later = now + MARKER_HORIZON_MS + 60_000
    await store.schedule("mail", [NewTask("later", later, REC)])
    await store.schedule("mail", [NewTask(f"b{i}", later, REC) for i in range(3)])
    assert await _markers(raw, namespace) == []

    await store.schedule("mail", [NewTask("soon", now + 30_000, REC)])
    assert len(await _markers(raw, namespace)) == 1
    await store.schedule("mail", [NewTask("c1", later, REC), NewTask("c2", now + 1_000, REC)])
    assert len(await _markers(raw, namespace)) == 2
    assert await store.count("mail") == {"due": 7, "running": 0, "dead": 0}


async def test_a_store_that_has_not_read_the_servers_clock_marks_every_call(
    redis_url: str, raw: aredis.Redis, namespace: str
) -> None:
    """Without a reading of the server's clock the store cannot tell a task due soon: it
    hands the marker's key to every call, and the script marks the task due now."""
    seconds, _ = await raw.time()
    store = RedisStore(RedisConfig(url=redis_url, namespace=namespace))
    await store.open()
    try:
        await store.schedule("mail", [NewTask("now", seconds * 1000, REC)])
    finally:
        await store.close()
    assert len(await _markers(raw, namespace)) == 1


async def test_a_resent_schedule_of_a_task_due_soon_is_not_written_twice(
    store: RedisStore, namespace: str
) -> None:
    from duetime.stores.redis.keys import call_key

    k = type_keys(namespace, "mail")
    now = int(await store.time_ms())
    keys = [k.due, k.data, k.dead, k.meta, k.fence, k.order, k.lane, k.group, k.groups, k.ready]
    keys.append(call_key(k, "s1"))
    args = ["ch", "mail", "0", "", "", "", "soon", now, REC]
    assert await store._run("schedule", keys, args) == [1]
    (c,) = (
        await store.claim(
            "mail", now_ms=now, limit=1, lease_ms=1000, max_stalls=1, at_most_once=False
        )
    ).claims
    await store.settle("mail", [Outcome("done", c)], now)  # it ran and is gone

    assert await store._run("schedule", keys, args) == [0]  # the resend does nothing
    assert await store.get("mail", "soon") is None


async def test_a_resent_submit_answers_as_the_first_send_did(
    store: RedisStore, namespace: str
) -> None:
    """only_new (App.submit) with a task due soon: the first send writes one id and finds
    the other taken; after the written task ran and is gone, the resend writes nothing and
    reports the same taken id, so the caller neither writes twice nor loses track."""
    from duetime.stores.redis.keys import call_key

    k = type_keys(namespace, "mail")
    now = int(await store.time_ms())
    await store._run(
        "schedule",
        [*schedule_keys(k), call_key(k, "s0")],
        ["ch", "mail", "0", "", "", "", "held", now + 3_600_000, REC],
    )
    keys = [*schedule_keys(k), call_key(k, "s2")]
    args = ["ch", "mail", "1", "", "", "", "fresh", now, REC, "held", now, record_text('{"x":1}')]
    assert await store._run("schedule", keys, args) == [1, b"held"]  # raw: bytes
    (c,) = (
        await store.claim(
            "mail", now_ms=now, limit=1, lease_ms=1000, max_stalls=1, at_most_once=False
        )
    ).claims
    await store.settle("mail", [Outcome("done", c)], now)

    assert await store._run("schedule", keys, args) == [0, b"held"]
    assert await store.get("mail", "fresh") is None


async def test_a_wake_up_message_that_does_not_decode_is_ignored(
    redis_url: str, namespace: str
) -> None:
    app = duetime.App(redis_url, namespace=namespace)
    ran: list[str] = []

    @app.task("job")
    async def job(payload: dict[str, object]) -> None:
        ran.append("job")

    raw = RawRedis(redis_url, namespace)
    try:
        async with running(app):
            await eventually(lambda: raw.publish_wake(b"job 1") == 1, 5, "the worker listens")
            for message in (b"\xff", b"job \xff\xfe", b"\xff 12", b"job not-a-time", b""):
                assert raw.publish_wake(message) == 1
            await app.schedule("job", "after")
            await eventually(lambda: ran == ["job"], 5, "the worker is still up")
    finally:
        raw.close()
        await app.close()


async def test_a_resent_conditional_write_answers_as_the_first_send_did(
    store: RedisStore, raw: aredis.Redis, namespace: str
) -> None:
    """schedule_if of a task with unique_for, due now: after the written task ran and its
    finish is remembered, the resend answers "written" as the first send did (not "recent"),
    and writes nothing again."""
    from duetime.stores.redis.keys import call_key, finished_key

    k = type_keys(namespace, "mail")
    now = int(await store.time_ms())
    marked = '{"p":{},"q":3600000}'
    keys = [k.due, k.data, k.dead, k.meta, k.lease, call_key(k, "w1"), k.order, k.lane]
    keys += (k.group, k.groups, k.ready, finished_key(k, "u1"))
    args = ["ch", "mail", now, 15_000, "u1", now, marked, "replace", 3_600_000, "", "0", 0, ""]
    args += ["", 0]
    first = await store._run("schedule_if", keys, args)
    assert first == [1, str(now).encode(), b""]
    (c,) = (
        await store.claim(
            "mail", now_ms=now, limit=1, lease_ms=1000, max_stalls=1, at_most_once=False
        )
    ).claims
    await store.settle("mail", [Outcome("done", c, unique_ms=3_600_000)], now)
    assert await raw.get(finished_key(k, "u1")) == str(now)
    assert 0 < await raw.pttl(finished_key(k, "u1")) <= 3_600_000

    assert await store._run("schedule_if", keys, args) == first  # the resend
    assert await store.get("mail", "u1") is None
    keys[5] = call_key(k, "w2")  # a new call: the finish counts
    assert (await store._run("schedule_if", keys, args))[0] == 3


async def test_a_finished_key_of_the_wrong_type_is_refused_before_anything_is_written(
    store: RedisStore, raw: aredis.Redis, namespace: str
) -> None:
    from duetime.stores.conditional import Condition

    k = type_keys(namespace, "mail")
    await raw.hset(f"duetime:{{{namespace}:mail}}:finished:b", "x", "1")
    tasks = [Condition(NewTask(i, T0, REC), "replace", 60_000) for i in ("a", "b")]

    with pytest.raises(duetime.StoreRefused, match="another type"):
        await store.schedule_if("mail", tasks, T0)
    assert await raw.exists(k.due, k.data) == 0
