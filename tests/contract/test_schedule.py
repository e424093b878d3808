"""Scheduling, moving, cancelling, reading: the producer's side of every store."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import duetime
from tests.helpers import eventually, running

AT = datetime(2031, 5, 4, 9, 30, tzinfo=UTC)


async def test_a_scheduled_task_can_be_read_back(app: duetime.App) -> None:
    due = await app.schedule("mail", "welcome-7", at=AT, payload={"to": "a@b.c", "n": [1, 2]})

    assert due == AT
    info = await app.get("mail", "welcome-7")
    assert info is not None
    assert (info.state, info.due, info.payload) == ("due", AT, {"to": "a@b.c", "n": [1, 2]})
    assert (info.every, info.until, info.attempts, info.error) == (None, None, 0, None)


async def test_scheduling_an_id_again_moves_it_and_replaces_its_payload(app: duetime.App) -> None:
    await app.schedule("mail", "x", at=AT, payload={"v": 1, "keep": True})
    later = AT + timedelta(days=1)
    await app.schedule("mail", "x", at=later, payload={"v": 2})

    info = await app.get("mail", "x")
    assert info is not None and (info.due, info.payload) == (later, {"v": 2})
    assert (await app.counts("mail"))["due"] == 1


async def test_a_periodic_task_keeps_every_and_until(app: duetime.App) -> None:
    until = AT + timedelta(weeks=10)
    await app.schedule("mail", "weekly", at=AT, every=timedelta(days=7), until=until)

    info = await app.get("mail", "weekly")
    assert info is not None and (info.every, info.until) == (timedelta(days=7), until)


async def test_delay_counts_from_the_stores_clock(app: duetime.App) -> None:
    before = await app.now_ms()
    due = await app.schedule("mail", "soon", delay=timedelta(seconds=30))
    after = await app.now_ms()

    ms = int(due.timestamp() * 1000)
    assert before + 30_000 <= ms <= after + 30_000


async def test_no_time_means_now(app: duetime.App) -> None:
    before = await app.now_ms()
    due = await app.schedule("mail", "now")
    assert before <= int(due.timestamp() * 1000) <= await app.now_ms()


async def test_submit_picks_a_short_fresh_id_and_returns_it(app: duetime.App) -> None:
    ids = [await app.submit("mail", at=AT, payload={"n": n}) for n in range(50)]

    assert len(set(ids)) == 50
    assert all(len(i) == 12 and i.isascii() and i.isalnum() for i in ids)
    for n, task_id in enumerate(ids):
        info = await app.get("mail", task_id)
        assert info is not None and (info.due, info.payload) == (AT, {"n": n})


async def test_submit_never_takes_an_id_in_use(
    app: duetime.App, monkeypatch: pytest.MonkeyPatch
) -> None:
    await app.schedule("mail", "taken00000ab", at=AT, payload={"mine": True})
    draws = iter(["taken00000ab", "taken00000ab", "fresh0000000"])
    monkeypatch.setattr(duetime.calls.producing, "new_task_id", lambda: next(draws))

    assert await app.submit("mail", at=AT + timedelta(hours=1), payload={"mine": False}) == (
        "fresh0000000"
    )
    taken = await app.get("mail", "taken00000ab")
    assert taken is not None and (taken.due, taken.payload) == (AT, {"mine": True})
    assert (await app.counts("mail"))["due"] == 2


async def test_submit_gives_up_when_every_id_drawn_is_taken(
    app: duetime.App, monkeypatch: pytest.MonkeyPatch
) -> None:
    await app.schedule("mail", "taken00000ab", at=AT, payload={"mine": True})
    monkeypatch.setattr(duetime.calls.producing, "new_task_id", lambda: "taken00000ab")

    with pytest.raises(duetime.StoreError, match="no free id"):
        await app.submit("mail", at=AT + timedelta(hours=1), payload={"mine": False})
    assert (await app.counts("mail"))["due"] == 1


async def test_only_new_reports_ids_another_task_holds(
    app: duetime.App,
    store: duetime.stores.base.Store,
) -> None:
    """The store's side of submit: an id in use is left alone and returned, unless the
    task under it has the very record given (then it is this task, sent twice)."""
    from duetime.stores.base import NewTask

    due = int(AT.timestamp() * 1000)
    first = NewTask("a", due, '{"p":{"v":1}}')
    assert await store.schedule("mail", [first], only_new=True) == []
    again = [first, NewTask("b", due, '{"p":{"v":2}}')]
    assert await store.schedule("mail", again, only_new=True) == []
    other = [NewTask("a", due + 1, '{"p":{"v":3}}'), NewTask("c", due, '{"p":{}}')]
    assert await store.schedule("mail", other, only_new=True) == ["a"]

    info = await app.get("mail", "a")
    assert info is not None and (info.due, info.payload) == (AT, {"v": 1})
    assert (await app.counts("mail"))["due"] == 3


async def test_schedule_many_writes_every_task_and_the_last_of_an_id_wins(
    app: duetime.App,
) -> None:
    tasks = [duetime.Task("mail", f"m{i}", at=AT + timedelta(minutes=i)) for i in range(2500)]
    tasks += [
        duetime.Task("report", "r1", at=AT, payload={"v": 1}),
        duetime.Task("report", "r1", at=AT, payload={"v": 2}),
    ]

    assert await app.schedule_many(tasks) == len(tasks)

    assert (await app.counts("mail"))["due"] == 2500
    r1 = await app.get("report", "r1")
    assert r1 is not None and r1.payload == {"v": 2}
    first = await app.list("mail", "due", limit=3)
    assert [t.task_id for t in first] == ["m0", "m1", "m2"]


async def test_listing_is_ordered_by_due_time_and_pages(app: duetime.App) -> None:
    for n, minutes in enumerate([30, 10, 20, 40]):
        await app.schedule("mail", f"t{n}", at=AT + timedelta(minutes=minutes))

    page1 = await app.list("mail", "due", limit=2)
    page2 = await app.list("mail", "due", limit=2, offset=2)
    assert [t.task_id for t in page1 + page2] == ["t1", "t2", "t0", "t3"]
    assert await app.list("mail", "dead") == []
    assert await app.list("mail", "running") == []


async def test_cancel_removes_a_task_and_says_whether_it_existed(app: duetime.App) -> None:
    await app.schedule("mail", "c", at=AT)

    assert await app.cancel("mail", "c") is True
    assert await app.get("mail", "c") is None
    assert await app.cancel("mail", "c") is False
    assert (await app.counts("mail")) == {"due": 0, "running": 0, "dead": 0}


async def test_namespaces_keep_apps_apart(app: duetime.App, store_url: str) -> None:
    other = duetime.App(store_url, namespace=app.namespace + "x")
    other.declare("mail")
    try:
        await app.schedule("mail", "shared-id", at=AT, payload={"who": "first"})
        await other.schedule("mail", "shared-id", at=AT, payload={"who": "second"})

        mine, theirs = await app.get("mail", "shared-id"), await other.get("mail", "shared-id")
        assert mine is not None and mine.payload == {"who": "first"}
        assert theirs is not None and theirs.payload == {"who": "second"}
    finally:
        await other.close()


async def test_a_type_the_app_does_not_know_fails_loudly(app: duetime.App) -> None:
    with pytest.raises(duetime.UnknownTaskType) as caught:
        await app.schedule("mial", "x", at=AT)

    assert caught.value.field == "task_type"
    assert "mial" in str(caught.value) and "mail" in str(caught.value)
    assert isinstance(caught.value, LookupError)
    assert (await app.counts("mail"))["due"] == 0


async def test_a_producer_declares_the_types_it_sends(app: duetime.App) -> None:
    app.declare("invoice")
    await app.schedule("invoice", "i1", at=AT)
    assert (await app.counts("invoice"))["due"] == 1


async def test_retry_of_a_task_that_is_not_dead_is_not_found(app: duetime.App) -> None:
    await app.schedule("mail", "alive", at=AT)
    with pytest.raises(duetime.TaskNotFound):
        await app.retry("mail", "alive")
    with pytest.raises(LookupError):
        await app.retry("mail", "never-existed")


async def test_code_that_is_not_async_uses_the_blocking_client(app: duetime.App) -> None:
    def in_a_plain_thread() -> tuple[object, object, bool, bool, object]:
        with app.sync() as client:
            due = client.schedule("mail", "from-flask", at=AT, payload={"v": 1})
            info = client.get("mail", "from-flask")
            listed = [t.task_id for t in client.list("mail")] == ["from-flask"]
            counted = client.counts("mail")["due"] == 1
            client.schedule_many([duetime.Task("mail", "b1", at=AT)])
            submitted = client.submit("mail", at=AT, payload={"v": 2})
            return due, info, listed, counted and client.cancel("mail", "b1"), submitted

    due, info, listed, counted, submitted = await asyncio.to_thread(in_a_plain_thread)

    assert due == AT and listed and counted
    assert isinstance(info, duetime.TaskInfo) and info.payload == {"v": 1}
    assert (await app.get("mail", "from-flask")) is not None
    assert isinstance(submitted, str)
    got = await app.get("mail", submitted)
    assert got is not None and got.payload == {"v": 2}

    def unknown_type() -> None:
        with app.sync() as client:
            client.schedule("nope", "x")

    with pytest.raises(duetime.UnknownTaskType):
        await asyncio.to_thread(unknown_type)


async def test_a_client_without_handlers_schedules_what_an_app_runs(
    app: duetime.App, store_url: str
) -> None:
    ran: list[dict[str, Any]] = []

    @app.task("job")
    async def job(payload: dict[str, Any]) -> None:
        ran.append(payload)

    producer = duetime.Client(store_url, namespace=app.namespace)
    producer.declare("job")
    try:
        async with running(app):
            await producer.schedule("job", "j1", payload={"n": 1})
            await eventually(lambda: ran == [{"n": 1}])
        with pytest.raises(duetime.UnknownTaskType):
            await producer.schedule("jobb", "j2")
    finally:
        await producer.close()
