"""Checks at the door, with no store: names, ids, times, durations, payloads, options."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import duetime
from duetime.calls.newtask import new_task
from duetime.clock import MAX_MS, MIN_MS, from_ms
from duetime.errors import PayloadError, ValidationError
from duetime.model import Task
from duetime.validate import (
    MAX_ID_BYTES,
    MAX_STORED_ID_BYTES,
    check_id,
    check_name,
    duration_ms,
    encode_payload,
    to_ms,
)
from duetime.worker.outcome import occurrence_id
from tests.bad_input import AT, BAD_SCHEDULES


def test_payloads_are_stored_readably() -> None:
    assert encode_payload({"name": "Élodie", "n": [1, 2.5, None]}, 1000) == (
        '{"name":"Élodie","n":[1,2.5,null]}'
    )


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


@pytest.mark.parametrize("task_id", ["daily@1700000000000", "a@0", "x@-5", "a@b@12", "@7"])
def test_an_id_ending_like_an_occurrence_id_is_reserved(task_id: str) -> None:
    """``"<id>@<ms>"`` is what duetime files occurrences under: a user's id ending so could
    be overwritten by, or overwrite, another task's occurrence."""
    with pytest.raises(ValidationError, match="reserved") as caught:
        check_id(task_id)
    assert caught.value.field == "task_id"
    with pytest.raises(ValidationError, match="reserved") as caught:
        check_id(task_id, "key")
    assert caught.value.field == "key"
    assert check_id(task_id, stored=True) == task_id  # lookups take occurrence ids


@pytest.mark.parametrize("task_id", ["user@example.com", "a@", "a@-", "a@12b", "a@1.5", "a@١٢"])
def test_ids_with_an_at_sign_that_ends_otherwise_are_fine(task_id: str) -> None:
    assert check_id(task_id) == task_id


def test_every_occurrence_id_of_a_valid_id_is_a_valid_stored_id() -> None:
    longest = "é" * (MAX_ID_BYTES // 2)  # 200 bytes: the longest id a user may pick
    assert check_id(longest) == longest
    for ms in (MIN_MS, MAX_MS, 0, -1):
        dead = occurrence_id(longest, ms)
        assert check_id(dead, stored=True) == dead
    assert len(occurrence_id(longest, MIN_MS).encode()) == MAX_STORED_ID_BYTES == 216
    with pytest.raises(ValidationError, match="216 bytes"):
        check_id("x" * 217, stored=True)
    with pytest.raises(ValidationError, match="200 bytes"):
        check_id("x" * 201)


def test_a_moment_between_milliseconds_rounds_up_so_nothing_runs_early() -> None:
    moment = datetime(2030, 1, 2, 3, 4, 5, 678_001, tzinfo=UTC)
    assert to_ms("at", moment) == to_ms("at", moment.replace(microsecond=679_000))


@pytest.mark.parametrize(
    ("change", "field"), [(c, f) for _, c, f in BAD_SCHEDULES], ids=[n for n, _, _ in BAD_SCHEDULES]
)
def test_a_bad_field_is_named_before_any_store_is_asked(change: dict[str, Any], field: str) -> None:
    fields: dict[str, Any] = {"task_id": "t1", "at": AT, **change}
    task = Task("mail", **fields)
    with pytest.raises(ValidationError) as caught:
        new_task(task, 1_900_000_000_000, 64 * 1024)
    assert caught.value.field == field


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
