"""Bad input is refused at the door, with an error naming the field, and nothing is written."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import duetime

AT = datetime(2031, 5, 4, 9, 30, tzinfo=UTC)
DEEP: Any = 1
for _ in range(40):
    DEEP = [DEEP]

BAD_SCHEDULES: list[tuple[str, dict[str, Any], str]] = [
    ("empty id", {"task_id": ""}, "task_id"),
    ("oversized id", {"task_id": "x" * 201}, "task_id"),
    ("id with a newline", {"task_id": "a\nb"}, "task_id"),
    ("id not a string", {"task_id": 12}, "task_id"),
    ("naive at", {"at": datetime(2031, 5, 4, 9, 30)}, "at"),
    ("at is a string", {"at": "2031-05-04"}, "at"),
    ("at and delay", {"at": AT, "delay": timedelta(seconds=1)}, "at"),
    ("negative delay", {"at": None, "delay": timedelta(seconds=-1)}, "delay"),
    ("payload a list", {"payload": [1, 2]}, "payload"),
    ("payload a string", {"payload": "{}"}, "payload"),
    ("payload with an int key", {"payload": {1: "x"}}, "payload"),
    ("payload with NaN", {"payload": {"x": math.nan}}, "payload"),
    ("payload with a set", {"payload": {"x": {1, 2}}}, "payload"),
    ("payload with a datetime", {"payload": {"when": AT}}, "payload"),
    ("payload too big", {"payload": {"blob": "x" * 70_000}}, "payload"),
    ("payload too deep", {"payload": {"a": DEEP}}, "payload"),
    ("every zero", {"every": timedelta(0)}, "every"),
    ("every negative", {"every": timedelta(days=-1)}, "every"),
    ("every a string", {"every": "weekly"}, "every"),
    ("until without every", {"until": AT + timedelta(days=1)}, "until"),
    ("until before at", {"every": timedelta(days=1), "until": AT - timedelta(days=1)}, "until"),
    ("naive until", {"every": timedelta(days=1), "until": datetime(2032, 1, 1)}, "until"),
]


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


def test_the_payload_limit_is_configurable() -> None:
    with pytest.raises(duetime.ValidationError) as caught:
        duetime.App("redis://localhost:1/0", max_payload_bytes=1)
    assert caught.value.field == "max_payload_bytes"


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"concurrency": 0}, "concurrency"),
        ({"retries": -1}, "retries"),
        ({"lease": 0.01}, "lease"),
        ({"timeout": -5}, "timeout"),
        ({"delivery": "exactly_once"}, "delivery"),
        ({"delivery": "at_most_once", "retries": 2}, "retries"),
        ({"max_stalls": -1}, "max_stalls"),
    ],
)
def test_bad_task_options_are_refused_at_registration(options: dict[str, Any], field: str) -> None:
    app = duetime.App("redis://localhost:1/0")
    with pytest.raises(duetime.ValidationError) as caught:
        app.task("t", **options)
    assert caught.value.field == field


def test_a_name_registered_twice_is_refused() -> None:
    app = duetime.App("redis://localhost:1/0")

    @app.task("t")
    async def first(payload: dict[str, Any]) -> None: ...

    with pytest.raises(duetime.ValidationError, match="already registered"):

        @app.task("t")
        async def second(payload: dict[str, Any]) -> None: ...
