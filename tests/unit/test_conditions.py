"""Scheduling on conditions, the producer's side: turns of one id, and the merge into what
the store says is pending."""

from __future__ import annotations

import json

import pytest

from duetime.calls.conditions import Wanted, merged, turns
from duetime.errors import SchemaError, ValidationError
from duetime.record import Record
from duetime.stores.base import NewTask
from duetime.triggers.periodic import Periodic


def wanted(
    task_id: str = "a", payload: dict[str, object] | None = None, unique_ms: int = 0
) -> Wanted:
    record = Record(json.dumps(payload or {}), unique_ms=unique_ms).encode()
    return Wanted(NewTask(task_id, 5000, record), payload, "merge", unique_ms, True)


def test_tasks_of_one_id_go_in_turns_in_their_order() -> None:
    given = [wanted("a", {"n": 1}), wanted("b"), wanted("a", {"n": 2}), wanted("a", {"n": 3})]

    got = turns(given)

    assert [[(w.new.id, w.payload) for w in turn] for turn in got] == [
        [("a", {"n": 1}), ("b", None)],
        [("a", {"n": 2})],
        [("a", {"n": 3})],
    ]


def test_a_merge_into_a_waiting_task_changes_its_payload_only() -> None:
    stored = Record('{"a":{"x":1},"l":[1]}', Periodic(60_000), 1000, 2, "trace", 0).encode()

    c = merged(wanted(payload={"a": {"y": 2}, "l": [2]}, unique_ms=9), "waits", stored, 1024)

    assert (c.mode, c.pending, c.expected, c.keep_due, c.unique_ms) == (
        "merge",
        "waits",
        stored,
        True,
        9,
    )
    record = Record.decode(c.task.record)
    assert record.payload == {"a": {"x": 1, "y": 2}, "l": [2]}
    assert (record.trigger, record.occurrence_ms, record.failures, record.traceback) == (
        Periodic(60_000),
        1000,
        2,
        "trace",
    )
    assert record.unique_ms == 9


def test_a_merge_into_a_task_that_runs_is_a_new_occurrence_of_it() -> None:
    stored = Record('{"a":1}', Periodic(60_000), 1000, 2, "trace", 7).encode()

    c = merged(wanted(payload={"b": 2}), "runs", stored, 1024)

    record = Record.decode(c.task.record)
    assert (record.payload, record.trigger, record.occurrence_ms, record.failures) == (
        {"a": 1, "b": 2},
        Periodic(60_000),
        None,
        0,
    )
    assert (record.traceback, record.unique_ms, c.pending, c.task.due_ms) == (None, 7, "runs", 5000)


def test_a_merge_finding_nothing_pending_writes_the_task_as_given() -> None:
    w = wanted(payload={"b": 2})
    c = merged(w, "none", "", 1024)
    assert (c.task, c.pending, c.expected) == (w.new, "none", "")


def test_a_merge_refuses_a_payload_it_makes_too_big_or_a_record_it_cannot_read() -> None:
    stored = Record('{"big":"' + "x" * 900 + '"}').encode()
    with pytest.raises(ValidationError, match="merged into the pending one") as caught:
        merged(wanted(payload={"more": "y" * 200}), "waits", stored, 1024)
    assert caught.value.field == "payload"
    with pytest.raises(SchemaError, match="if_exists='replace'"):
        merged(wanted(payload={}), "waits", '{"p":[1]}', 1024)
