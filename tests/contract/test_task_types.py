"""Store.task_types on each store: the types that hold a task, whatever its state, a
partitioned type once, and nothing of another namespace."""

from __future__ import annotations

from datetime import timedelta

import duetime
from duetime.admin.discover import adopt, stored_types
from duetime.partitions.layout import LAYOUT_TYPE
from duetime.stores.base import Store
from tests.helpers import make_dead


async def test_the_types_holding_a_task_are_listed_in_every_state(
    app: duetime.App, store: Store, store_url: str, namespace: str
) -> None:
    assert await store.task_types() == []
    app.declare("split", partitions=3)
    await app.schedule("mail", "m1", delay=3600)
    await make_dead(app, "report", 2)
    await app.schedule_many(
        duetime.Task("split", f"s{n}", delay=timedelta(hours=1)) for n in range(12)
    )
    other = duetime.App(store_url, namespace=namespace + "x")
    other.declare("elsewhere")
    try:
        await other.schedule("elsewhere", "e1")
    finally:
        await other.close()

    assert await store.task_types() == ["mail", "report", "split"]
    inner = await store.inner.task_types()  # type: ignore[attr-defined]
    assert LAYOUT_TYPE in inner and "split#0" in inner and "split" not in inner

    await app.cancel("mail", "m1")
    assert await store.task_types() == ["report", "split"]


async def test_a_running_task_keeps_its_type_listed(app: duetime.App, store: Store) -> None:
    await app.schedule("mail", "m1")
    batch = await store.claim(
        "mail",
        now_ms=await app.now_ms(),
        limit=1,
        lease_ms=60_000,
        max_stalls=0,
        at_most_once=False,
    )
    assert [c.id for c in batch.claims] == ["m1"]
    assert await store.task_types() == ["mail"]


async def test_a_process_without_the_code_adopts_the_stored_types(
    app: duetime.App, store_url: str, namespace: str
) -> None:
    app.declare("split", partitions=3)
    await app.schedule_many(
        duetime.Task("split", f"s{n}", delay=timedelta(hours=1)) for n in range(12)
    )
    app.declare("duetime.poller.p", "duetime.keyTimers")
    await app.schedule("duetime.poller.p", "p", delay=3600)
    await app.schedule("duetime.keyTimers", "k1", delay=3600)
    bare = duetime.App(store_url, namespace=namespace)
    try:
        assert await stored_types(bare) == ["duetime.keyTimers", "split"]
        everything = await stored_types(bare, internal=True)
        assert everything == ["duetime.keyTimers", "duetime.poller.p", "split"]
        assert bare.task_type("split").partitions == 3
        assert (await bare.counts("split"))["due"] == 12
        info = await bare.get("split", "s7")
        assert info is not None and info.state == "due"
        await adopt(bare, "neverUsed")
        assert await bare.counts("neverUsed") == {"due": 0, "running": 0, "dead": 0}
    finally:
        await bare.close()
