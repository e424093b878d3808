"""Validation at the door and the stored record format."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from duetime.codec import (
    check_id,
    check_name,
    decode_record,
    duration_ms,
    encode_payload,
    encode_record,
    from_ms,
    to_ms,
)
from duetime.errors import PayloadError, SchemaError, ValidationError


def test_a_record_round_trips_and_writes_only_what_is_set() -> None:
    text = encode_record('{"a":1}', every_ms=5, until_ms=9, occurrence_ms=3, failures=2)
    assert text == '{"p":{"a":1},"e":5,"u":9,"o":3,"f":2}'
    record = decode_record(text)
    assert (
        record.payload,
        record.every_ms,
        record.until_ms,
        record.occurrence_ms,
        record.failures,
    ) == ({"a": 1}, 5, 9, 3, 2)
    assert encode_record("{}") == '{"p":{}}'


def test_payloads_are_stored_readably() -> None:
    assert encode_payload({"name": "Élodie", "n": [1, 2.5, None]}, 1000) == (
        '{"name":"Élodie","n":[1,2.5,null]}'
    )


@pytest.mark.parametrize(
    "text",
    ["", "not json", "[1]", '{"e":1}', '{"p":[]}', '{"p":{},"e":"x"}', '{"p":{}} junk', "[" * 5000],
)
def test_a_corrupt_record_raises_schema_error(text: str) -> None:
    with pytest.raises(SchemaError):
        decode_record(text)


def test_a_record_with_surrounding_whitespace_still_reads() -> None:
    assert decode_record('  {"p": {"x": 1}} ').payload == {"x": 1}


def test_the_size_limit_counts_utf8_bytes() -> None:
    encode_payload({"s": "é" * 10}, 29)  # {"s":""} is 8 bytes, each é is 2: 28 in all
    with pytest.raises(PayloadError, match="is 30 bytes of JSON, over the limit of 29"):
        encode_payload({"s": "é" * 11}, 29)


def test_datetimes_convert_to_epoch_ms_exactly() -> None:
    moment = datetime(2030, 1, 2, 3, 4, 5, 678_000, tzinfo=UTC)
    assert from_ms(to_ms("at", moment)) == moment
    paris = datetime(2030, 1, 2, 4, 4, 5, 678_000, tzinfo=timezone(timedelta(hours=1)))
    assert to_ms("at", paris) == to_ms("at", moment)


@given(st.integers(min_value=0, max_value=2**44))
def test_ms_survive_the_round_trip(ms: int) -> None:
    assert to_ms("at", from_ms(ms)) == ms


def test_durations_accept_timedeltas_and_seconds() -> None:
    assert duration_ms("d", timedelta(seconds=1.5)) == 1500
    assert duration_ms("d", 0.25) == 250
    assert duration_ms("d", 0, allow_zero=True) == 0
    for bad in (True, "1", float("inf"), -1):
        with pytest.raises(ValidationError):
            duration_ms("d", bad)


def test_names_and_ids() -> None:
    assert check_name("task_type", "sendSeriesStartsEmail") == "sendSeriesStartsEmail"
    assert check_id("user@example.com / #7") == "user@example.com / #7"
    with pytest.raises(ValidationError):
        check_name("task_type", "a" * 65)
    with pytest.raises(ValidationError):
        check_id("é" * 101)  # 202 bytes


def test_a_moment_between_milliseconds_rounds_up_so_nothing_runs_early() -> None:
    moment = datetime(2030, 1, 2, 3, 4, 5, 678_001, tzinfo=UTC)
    assert to_ms("at", moment) == to_ms("at", moment.replace(microsecond=679_000))
