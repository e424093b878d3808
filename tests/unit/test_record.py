"""The stored record: its text, its one decoder, and the payload kept as stored."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from duetime import record as record_module
from duetime.calls.newtask import new_task
from duetime.errors import SchemaError
from duetime.model import Task
from duetime.record import Record
from duetime.triggers.cron.expression import parse_cron
from duetime.triggers.cron.trigger import CronTrigger
from duetime.triggers.periodic import Periodic


def test_a_record_round_trips_and_writes_only_what_is_set() -> None:
    text = Record('{"a":1}', Periodic(5, 9), occurrence_ms=3, failures=2).encode()
    assert text == '{"p":{"a":1},"e":5,"u":9,"o":3,"f":2}'
    record = Record.decode(text)
    assert (record.payload, record.trigger, record.occurrence_ms, record.failures) == (
        {"a": 1},
        Periodic(5, 9),
        3,
        2,
    )
    assert Record("{}").encode() == '{"p":{}}'


def test_a_cron_schedule_round_trips_in_its_record() -> None:
    cron = CronTrigger(parse_cron("0 9 * * 1-5", "Europe/Madrid"), "once", missed_count=2)
    text = Record('{"k":[1]}', cron, occurrence_ms=1000).encode()
    assert (
        text
        == '{"p":{"k":[1]},"c":{"x":"0 9 * * 1-5","z":"Europe/Madrid","m":"once","nm":2},"o":1000}'
    )
    assert Record.decode(text) == Record('{"k":[1]}', cron, occurrence_ms=1000)


def test_the_payload_keeps_its_stored_text_whatever_is_done_to_the_dict() -> None:
    record = Record.decode('{"p":{"items":[],"name":"Élodie"},"f":1}')
    record.payload["items"].append("x")
    assert record.payload_json == '{"items":[],"name":"Élodie"}'
    assert Record.decode(record.encode()).payload == {"items": [], "name": "Élodie"}


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json",
        "[1]",
        '{"e":1}',
        '{"p":[]}',
        '{"p":{},"e":"x"}',
        '{"p":{}} junk',
        '{"p":{},"o":1.5}',
        '{"p":{},"c":[]}',
        '{"p":{},"c":{"x":"61 * * * *","z":"UTC"}}',
        '{"p":{},"f":',
        "[" * 5000,
    ],
)
def test_a_corrupt_record_raises_schema_error(text: str) -> None:
    with pytest.raises(SchemaError):
        Record.decode(text)


PLAIN_RECORDS = [
    '{"p":{}}',
    '{"p":{"i":1,"due":1764400000.123456,"pad":"xx"}}',
    '{"p":{"big":123456789012345678901234567890,"neg":-98765432109876543210}}',
    '{"p":{"p":{"p":1}}}',
    r'{"p":{"text":"caf\u00e9 \\ \"quoted\"","name":"Élodie","emoji":"🎉"}}',
    '{"p":{"n":[1,2.5,-0.0,1e-300,true,false,null],"d":{}}}',
    '{"p":{"a":1},"p":{"b":2}}',  # a second "p": read as the standard library reads it
    '{"p":{"a":1},"f":2}',
    '{"p": {"spaced": 1}}',
]


@pytest.mark.parametrize("text", PLAIN_RECORDS)
def test_the_fast_reader_reads_what_the_standard_library_reads(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """msgspec reads a one-off task's first attempt; the standard library every other
    record, and every record where msgspec is not installed: both read alike."""
    fast = Record.decode(text)
    monkeypatch.setattr(record_module, "_fast_json", None)
    slow = Record.decode(text)
    assert fast.payload == slow.payload
    assert json.loads(fast.payload_json) == json.loads(slow.payload_json) == slow.payload
    assert (fast.failures, fast.trigger, fast.occurrence_ms) == (
        slow.failures,
        slow.trigger,
        slow.occurrence_ms,
    )


def test_an_integer_beyond_64_bits_is_read_exactly() -> None:
    record = Record.decode('{"p":{"id":123456789012345678901234567890}}')
    assert record.payload == {"id": 123456789012345678901234567890}
    assert type(record.payload["id"]) is int


@pytest.mark.parametrize(
    "text",
    [
        '{"p":{"x":NaN}}',
        '{"p":{"x":Infinity}}',
        '{"p":{"x":"\udc80"}}',  # a byte that is not UTF-8, as the store read it
        '{"p":{"x":1}',
    ],
)
def test_what_the_fast_reader_refuses_is_refused_with_the_reason(text: str) -> None:
    with pytest.raises(SchemaError, match="not JSON|not valid JSON|not UTF-8"):
        Record.decode(text)


def test_a_record_written_by_something_else_still_reads() -> None:
    record = Record.decode('  {"f": 2, "p": {"x": 1}} ')
    assert (record.payload, record.failures, record.payload_json) == ({"x": 1}, 2, '{"x":1}')


def test_a_revived_record_counts_its_attempts_afresh_and_keeps_the_rest() -> None:
    record = Record('{"a":1}', Periodic(5), occurrence_ms=3, failures=4, traceback="Trace\n")
    assert record.revived() == Record('{"a":1}', Periodic(5), occurrence_ms=3)
    assert '"t"' not in record.revived().encode()


def test_a_failures_traceback_is_kept_as_text_and_only_when_there_is_one() -> None:
    trace = 'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: "é" \\ \n'
    text = Record('{"a":1}', failures=1, traceback=trace).encode()
    assert text.startswith('{"p":{"a":1},"f":1,"t":"Traceback')
    assert Record.decode(text).traceback == trace
    # An internal error's dead letter may keep one at its first attempt.
    assert Record.decode(Record("{}", traceback="T").encode()) == Record("{}", traceback="T")
    # Records written before the field, and after successes, have none.
    assert Record.decode('{"p":{},"f":2}').traceback is None
    assert Record.decode('{"p":{}}').traceback is None
    with pytest.raises(SchemaError, match="field 't'"):
        Record.decode('{"p":{},"f":1,"t":5}')


def test_a_new_task_is_checked_and_written_as_a_record() -> None:
    at = datetime(2031, 5, 4, 9, 30, tzinfo=UTC)
    task = Task("mail", "t1", at=at, payload={"to": "a@b.c"}, every=None)
    new = new_task(task, None, 1000)
    assert (new.id, new.record) == ("t1", '{"p":{"to":"a@b.c"}}')
    assert new.due_ms == int(at.timestamp() * 1000)


def test_the_mark_of_unique_for_round_trips_last_and_only_when_set() -> None:
    text = Record('{"a":1}', None, occurrence_ms=3, failures=1, unique_ms=3_600_000).encode()
    assert text == '{"p":{"a":1},"o":3,"f":1,"q":3600000}'
    record = Record.decode(text)
    assert (record.payload, record.failures, record.unique_ms) == ({"a": 1}, 1, 3_600_000)
    assert Record.decode('{"p":{}}').unique_ms == 0
    assert Record.decode(Record("{}").revived().encode()).unique_ms == 0
    assert Record.decode(Record("{}", unique_ms=5).revived().encode()).unique_ms == 5
    with pytest.raises(SchemaError, match="field 'q'"):
        Record.decode('{"p":{},"q":"1h"}')
    with pytest.raises(SchemaError, match="field 'q'"):
        Record.decode('{"p":{},"q":-1}')


def test_a_task_with_unique_for_is_written_with_its_mark() -> None:
    from datetime import timedelta

    task = Task("t", "a", payload={"v": 1}, unique_for=timedelta(hours=1))
    assert new_task(task, 1000, 1024).record == '{"p":{"v":1},"q":3600000}'
    assert new_task(Task("t", "a", payload={"v": 1}), 1000, 1024).record == '{"p":{"v":1}}'


def test_each_trigger_mark_names_the_kind_that_writes_it() -> None:
    """A kind's module is imported when a record carries its mark (triggers/kinds.py)."""
    import importlib

    from duetime.triggers.kinds import MARKS, kind_of

    assert len({key for key, _, _ in MARKS}) == len(MARKS)
    for key, module, name in MARKS:
        kind = getattr(importlib.import_module(module), name)
        assert kind.KEY == key and kind_of({key: 1}) is kind
    assert kind_of({"o": 5, "f": 1}) is None
