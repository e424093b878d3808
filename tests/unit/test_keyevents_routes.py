"""Key expiry events: the id of the task a key's expiry makes, and key timers' names."""

from __future__ import annotations

import pytest

from duetime.features.keyevents.routes import event_id, parse_timer
from duetime.validate import MAX_STORED_ID_BYTES, check_id, is_occurrence_id

NOW = 1_900_000_000_000


def test_a_key_that_is_a_valid_id_is_its_expirys_id() -> None:
    assert event_id("session:42", NOW) == f"session:42@{NOW}"
    assert event_id("a@7", NOW) == f"a@7@{NOW}"


@pytest.mark.parametrize(
    "key",
    [
        "k" * 201,
        "é" * 5000,
        "tab\there",
        "\x00",
        "€" * 67 + "x" * 100,  # the cut falls inside a character
        b"\xff\xfe".decode("utf-8", "surrogateescape") + "z" * 300,  # bytes that are not UTF-8
    ],
)
def test_any_key_gives_an_id_every_call_takes(key: str) -> None:
    task_id = event_id(key, NOW)
    assert check_id(task_id, stored=True) == task_id
    assert len(task_id.encode("utf-8", "surrogateescape")) <= MAX_STORED_ID_BYTES
    assert is_occurrence_id(task_id) and task_id.endswith(f"@{NOW}")


def test_keys_that_share_a_start_get_ids_of_their_own() -> None:
    start = "k" * 250
    assert event_id(start + "a", NOW) != event_id(start + "b", NOW)
    assert event_id(start + "a", NOW) == event_id(start + "a", NOW)
    assert event_id(start + "a", NOW).startswith("k" * 150)


def test_key_timers_name_their_handler_and_carry_json() -> None:
    assert parse_timer('6f1c:??sendSms??["+34600000000",{"text":"hi"}]') == (
        "sendSms",
        ["+34600000000", {"text": "hi"}],
        None,
    )
    assert parse_timer("6f1c:??sendSms??NaN")[2] is not None
