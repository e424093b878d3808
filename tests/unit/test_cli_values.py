"""The values the duetime command reads (``cli/values.py``): durations and times as people
write them, and how a store is named in messages."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta, timezone

import pytest

from duetime.cli.values import parse_duration, parse_time
from duetime.stores import shown_url


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90),
        ("1.5", 1.5),
        ("-5", -5),
        ("90s", 90),
        ("5m", 300),
        ("2h", 7200),
        ("1d", 86400),
        ("1.5h", 5400),
        ("1h30m", 5400),
        ("1d2h3m4s", 93784),
        (" 5M ", 300),
        ("-5m", -300),
        ("+5m", 300),
        ("PT5M", 300),
        ("pt5m", 300),
        ("PT1H30M", 5400),
        ("P1D", 86400),
        ("P1DT2H", 93600),
        ("P2W", 1_209_600),
        ("PT0.5S", 0.5),
        ("PT0,5S", 0.5),
        ("-PT5M", -300),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("5x", "is not a duration: give seconds (90), 90s, 5m, 2h, 1d, 1h30m, or ISO 8601"),
        ("5 minutes", "is not a duration"),
        ("m5", "is not a duration"),
        ("--5m", "is not a duration"),
        ("", "is not a duration"),
        ("P5M", "years and months have no fixed length; give days (P30D), or for minutes"),
        ("P1Y", "years and months have no fixed length"),
        ("P", "is not an ISO 8601 duration such as PT5M"),
        ("PT", "is not an ISO 8601 duration"),
        ("P1DT", "is not an ISO 8601 duration"),
        ("PT5M1H", "is not an ISO 8601 duration"),
    ],
)
def test_what_is_not_a_duration_says_what_is_taken(text: str, said: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_duration(text)
    assert said in str(caught.value)


def test_times_need_an_offset_and_say_how_to_add_one() -> None:
    assert parse_time("2030-01-02T09:00:00Z") == datetime(2030, 1, 2, 9, tzinfo=UTC)
    assert parse_time("2030-01-02t09:00:00z") == datetime(2030, 1, 2, 9, tzinfo=UTC)
    madrid = timezone(timedelta(hours=1))
    assert parse_time("2030-01-02T10:00:00+01:00") == datetime(2030, 1, 2, 10, tzinfo=madrid)
    with pytest.raises(ValueError) as naive:
        parse_time("2030-01-02T09:00")
    assert str(naive.value) == (
        "'2030-01-02T09:00' has no time zone: add Z or +00:00 (2030-01-02T09:00:00Z), or its "
        "own offset"
    )
    with pytest.raises(ValueError, match="is not an ISO 8601 time, e.g. 2030-01-02T09:00:00Z"):
        parse_time("next monday")


def test_a_store_is_named_with_its_sqlite_path_absolute_and_no_password() -> None:
    here = os.getcwd()
    assert shown_url("sqlite:///duetime.db") == f"sqlite:///{here}/duetime.db"
    assert shown_url("sqlite:///data/x.db?synchronous=normal") == f"sqlite:///{here}/data/x.db"
    assert shown_url("sqlite:////var/lib/x.db") == "sqlite:////var/lib/x.db"
    assert shown_url("redis://user:s3cret@host:6379/0") == "redis://user:***@host:6379/0"
    assert shown_url("postgresql://me:pw@db/app") == "postgresql://me:***@db/app"
