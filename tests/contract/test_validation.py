"""Bad input is refused at the door, with an error naming the field, and nothing is written."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import pytest

import duetime
from tests.bad_input import AT, BAD_SCHEDULES


@pytest.mark.parametrize(
    ("change", "field"), [(c, f) for _, c, f in BAD_SCHEDULES], ids=[n for n, _, _ in BAD_SCHEDULES]
)
async def test_a_bad_field_is_named_and_nothing_is_written(
    app: duetime.App, change: dict[str, Any], field: str
) -> None:
    args: dict[str, Any] = {"task_id": "t1", "at": AT, **change}
    task_id = args.pop("task_id")

    with pytest.raises(duetime.ValidationError) as caught:
        await app.schedule("mail", task_id, **args)

    assert caught.value.field == field
    assert field in str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert await app.counts("mail") == {"due": 0, "running": 0, "dead": 0}


@pytest.mark.parametrize("name", ["", "1abc", "has space", "br{ace}", "a:b", "x" * 65, None])
async def test_a_bad_type_name_is_refused(app: duetime.App, name: Any) -> None:
    with pytest.raises(duetime.ValidationError) as caught:
        await app.schedule(name, "t1", at=AT)
    assert caught.value.field == "task_type"


async def test_one_bad_task_in_a_batch_writes_none_of_it(app: duetime.App) -> None:
    tasks = [duetime.Task("mail", f"ok{i}", at=AT) for i in range(10)]
    tasks.insert(7, duetime.Task("mail", "bad", at=datetime(2031, 1, 1)))

    with pytest.raises(duetime.ValidationError) as caught:
        await app.schedule_many(tasks)

    assert caught.value.field == "tasks[7].at"
    assert await app.counts("mail") == {"due": 0, "running": 0, "dead": 0}


async def test_an_unknown_type_in_a_batch_is_named_by_its_place(app: duetime.App) -> None:
    tasks = [duetime.Task("mail", "a", at=AT), duetime.Task("mial", "b", at=AT)]
    with pytest.raises(duetime.UnknownTaskType) as caught:
        await app.schedule_many(tasks)
    assert caught.value.field == "tasks[1].task_type" and "'mial'" in str(caught.value)
    assert (await app.counts("mail"))["due"] == 0


async def test_a_batch_item_that_is_not_a_task_is_refused(app: duetime.App) -> None:
    with pytest.raises(duetime.ValidationError) as caught:
        await app.schedule_many([duetime.Task("mail", "a", at=AT), ("mail", "b")])  # type: ignore[list-item]
    assert caught.value.field == "tasks[1]"
    assert (await app.counts("mail"))["due"] == 0


LONE = "\ud800"  # a lone surrogate: a str, but not text UTF-8 can carry


async def test_text_that_utf8_cannot_carry_is_refused_by_name(app: duetime.App) -> None:
    calls: dict[str, tuple[Callable[[], Awaitable[object]], str]] = {
        "schedule id": (lambda: app.schedule("mail", "a" + LONE, at=AT), "task_id"),
        "schedule payload": (lambda: app.schedule("mail", "a", payload={"x": LONE}), "payload"),
        "payload key": (lambda: app.schedule("mail", "a", payload={LONE: 1}), "payload"),
        "submit payload": (lambda: app.submit("mail", payload={"x": [LONE]}), "payload"),
        "get": (lambda: app.get("mail", LONE), "task_id"),
        "cancel": (lambda: app.cancel("mail", LONE), "task_id"),
        "type": (lambda: app.schedule(LONE, "a"), "task_type"),
    }
    for what, (call, field) in calls.items():
        with pytest.raises(duetime.ValidationError) as caught:
            await call()
        assert caught.value.field == field, what
    assert await app.counts("mail") == {"due": 0, "running": 0, "dead": 0}


async def test_a_batch_with_one_payload_utf8_cannot_carry_writes_nothing(
    app: duetime.App,
) -> None:
    tasks = [duetime.Task("mail", f"t{i}", at=AT, payload={"i": i}) for i in range(1500)]
    tasks[1200] = duetime.Task("mail", "t1200", at=AT, payload={"text": "caf" + LONE})

    with pytest.raises(duetime.PayloadError) as caught:
        await app.schedule_many(tasks)

    assert caught.value.field == "tasks[1200].payload"
    assert await app.counts("mail") == {"due": 0, "running": 0, "dead": 0}


async def test_ids_ending_like_an_occurrence_id_are_refused_everywhere_a_user_names_one(
    app: duetime.App,
) -> None:
    """``"<id>@<ms>"`` is reserved for the ids duetime files occurrences under."""

    @app.task("report")
    async def report(payload: dict[str, Any]) -> None: ...

    calls: dict[str, tuple[Callable[[], Awaitable[object]], str]] = {
        "schedule": (lambda: app.schedule("mail", "daily@123", at=AT), "task_id"),
        "schedule_many": (
            lambda: app.schedule_many(
                [duetime.Task("mail", "a", at=AT), duetime.Task("mail", "b@-4", at=AT)]
            ),
            "tasks[1].task_id",
        ),
        "add_cron": (lambda: app.add_cron("nightly@1", "0 0 * * *", task="report"), "name"),
    }
    for what, (call, field) in calls.items():
        with pytest.raises(duetime.ValidationError, match="reserved") as caught:
            await call()
        assert caught.value.field == field, what
    assert await app.counts("mail") == {"due": 0, "running": 0, "dead": 0}
    assert await app.crons() == []
    # Calls that look tasks up take such ids: they are the ids of occurrences.
    assert await app.get("mail", "daily@123") is None
    assert await app.cancel("mail", "daily@123") is False


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 10**30}, "limit"),
        ({"limit": True}, "limit"),
        ({"limit": 1.5}, "limit"),
        ({"offset": -1}, "offset"),
        ({"offset": 10**30}, "offset"),
    ],
)
async def test_a_listing_page_out_of_range_is_refused_by_name(
    app: duetime.App, options: dict[str, Any], field: str
) -> None:
    with pytest.raises(duetime.ValidationError) as caught:
        await app.list("mail", **options)
    assert caught.value.field == field
    assert await app.list("mail", limit=1_000_000, offset=2**53) == []
