"""The parts of a poller that need no store: the default delay, the event listeners, the
errors' properties, and the payload of a poller's task."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

import duetime
from duetime.errors import SchemaError
from duetime.features.pollers.events import PollerEvents
from duetime.features.pollers.poller import default_delay, default_limit
from duetime.triggers.poll import read_attempt, tick_payload, tick_type


def test_the_default_delay_is_a_tenth_of_a_second_then_attempt_seconds_up_to_a_minute() -> None:
    assert [default_delay(a) for a in (0, 1, 2, 30, 60, 61, 1000)] == [
        0.1,
        1,
        2,
        30,
        60,
        60,
        60,
    ]
    assert default_limit(5, ["a", "b"]) == 3 and default_limit(1, ["a", "b"]) == -1


async def test_listeners_are_called_in_order_sync_or_async_and_a_failing_one_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events = PollerEvents()
    heard: list[tuple[str, Any]] = []

    def first(event: Any) -> None:
        heard.append(("first", event))

    def broken(event: Any) -> None:
        raise RuntimeError("listener bug")

    async def last(event: Any) -> None:
        heard.append(("last", event))

    for listener in (first, broken, last):
        events.on("task", listener)
    assert events.wants("task") and not events.wants("error")
    event = duetime.TaskEvent("mail", "user-1")
    await events.emit("task", event)
    assert heard == [("first", event), ("last", event)]
    assert "a listener of task events failed" in caplog.text
    events.off("task", first)
    events.off("task", first)
    await events.emit("task", event)
    assert heard[-1] == ("last", event) and len(heard) == 3


def test_unknown_events_and_listeners_that_cannot_be_called_are_refused() -> None:
    events = PollerEvents()
    with pytest.raises(duetime.ValidationError, match="unknown poller event 'tasks'"):
        events.on("tasks", print)  # type: ignore[call-overload]
    with pytest.raises(duetime.ValidationError, match="must be callable"):
        events.on("error", None)  # type: ignore[call-overload]


def test_the_errors_carry_plantons_properties() -> None:
    dup = duetime.DuplicateTaskNameError("mail", "another poller")
    assert dup.duplicate_task_name == "mail" and isinstance(dup, duetime.ValidationError)
    bad = duetime.InvalidTaskConfigurationError("mail", "concurrency", "must be 1 or more")
    assert (bad.task_name, bad.field) == ("mail", "concurrency")
    assert duetime.InvalidTaskConfigurationNameError is duetime.InvalidTaskConfigurationError
    odd = duetime.UnexpectedTaskInstructionsError("mail", {"not": "a list"} | {"x": "y" * 500})
    assert odd.task_name == "mail" and odd.unexpected_task_instructions == {
        "not": "a list",
        "x": "y" * 500,
    }
    assert len(str(odd)) < 300 and "expected a list of strings" in str(odd)
    for error in (dup, bad, odd):
        assert isinstance(error, duetime.DuetimeError)
    event = duetime.ErrorEvent("mail", odd)
    assert (event.task_name, event.error) == ("mail", odd)


def test_a_pollers_task_carries_its_attempt_count() -> None:
    assert tick_type("mail") == "duetime.poller.mail"
    assert tick_payload(3) == '{"attempt":3}'
    assert read_attempt({"attempt": 3}) == 3
    for bad in ({}, {"attempt": -1}, {"attempt": "1"}, {"attempt": True}):
        with pytest.raises(SchemaError):
            read_attempt(bad)


def test_a_pollers_lease_is_the_lease_of_its_calls_ten_seconds_by_default() -> None:
    app = duetime.App("sqlite:///unused.db")  # never opened
    app.poller("quick", lease=2)(lambda ctx: [])
    app.poller("plain")(lambda ctx: [])
    assert app.types["duetime.poller.quick"].policy.lease == timedelta(seconds=2)
    assert app.types["duetime.poller.plain"].policy.lease == timedelta(seconds=10)
