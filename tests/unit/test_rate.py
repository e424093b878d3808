"""Rates and the flow options: what ``rate`` and ``global_concurrency`` take, and refuse."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

import duetime
from duetime.model import TaskPolicy
from duetime.rate import as_rate
from duetime.stores.gating import Gate
from duetime.tasktype import gate_of


@pytest.mark.parametrize(
    ("text", "n", "per"),
    [
        ("100/s", 100, timedelta(seconds=1)),
        ("30/m", 30, timedelta(minutes=1)),
        (" 5 / h ", 5, timedelta(hours=1)),
    ],
)
def test_a_rate_string_names_starts_per_period(text: str, n: int, per: timedelta) -> None:
    rate = as_rate(text)
    assert rate == duetime.Rate(n, per=per) and rate is not None
    assert rate.bucket == n and rate.interval_ms == per / timedelta(milliseconds=1) / n


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("0/s", "rate"),
        ("100/fortnight", "rate"),
        ("1.5/s", "rate"),
        ("-3/s", "rate"),
        ("", "rate"),
        (100, "rate"),
        (True, "rate"),
    ],
)
def test_what_is_not_a_rate_is_refused_naming_the_field(value: object, field: str) -> None:
    with pytest.raises(duetime.ValidationError) as refused:
        as_rate(value)
    assert refused.value.field == field


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: duetime.Rate(0), "rate"),
        (lambda: duetime.Rate(True), "rate"),
        (lambda: duetime.Rate(5, per=timedelta(0)), "rate.per"),
        (
            lambda: duetime.Rate(5, per=2),  # type: ignore[arg-type]
            "rate.per",
        ),
        (lambda: duetime.Rate(5, burst=0), "rate.burst"),
    ],
)
def test_a_bad_rate_object_is_refused_naming_its_field(build: object, field: str) -> None:
    with pytest.raises(duetime.ValidationError) as refused:
        build()  # type: ignore[operator]
    assert refused.value.field == field


def test_a_rate_shows_as_it_is_written() -> None:
    assert str(duetime.Rate(100)) == "100/s"
    assert str(duetime.Rate(3, per=timedelta(minutes=1), burst=1)) == "3/m (burst 1)"


def test_the_policy_takes_a_rate_string_or_object_and_a_global_concurrency() -> None:
    policy = TaskPolicy.from_options(rate="50/s", global_concurrency=3)
    assert policy.rate == duetime.Rate(50) and policy.global_concurrency == 3
    with pytest.raises(duetime.ValidationError) as refused:
        TaskPolicy.from_options(global_concurrency=0)
    assert refused.value.field == "global_concurrency"
    with pytest.raises(duetime.ValidationError) as refused:
        TaskPolicy(rate="50/s")  # type: ignore[arg-type]
    assert refused.value.field == "rate"


def test_the_gate_of_a_type_is_its_limits_or_none() -> None:
    assert gate_of(TaskPolicy()) is None
    assert gate_of(TaskPolicy(global_concurrency=7)) == Gate(max_running=7)
    assert gate_of(TaskPolicy(rate=duetime.Rate(50, burst=10))) == Gate(20.0, 10.0, 0)


def test_partitions_each_need_a_whole_slot_and_burst() -> None:
    assert gate_of(TaskPolicy(global_concurrency=4), partitions=4) == Gate(max_running=4)
    with pytest.raises(duetime.ValidationError) as refused:
        gate_of(TaskPolicy(global_concurrency=3), partitions=4)
    assert refused.value.field == "global_concurrency"
    with pytest.raises(duetime.ValidationError) as refused:
        gate_of(TaskPolicy(rate=duetime.Rate(100, burst=3)), partitions=4)
    assert refused.value.field == "rate"


def test_the_shares_of_partitions_add_up_to_the_gate() -> None:
    gate = Gate(interval_ms=10.0, burst=8.0, max_running=10)
    shares = [gate.share(p, 4) for p in range(4)]
    assert [s.max_running for s in shares] == [3, 3, 2, 2]
    assert all(s.interval_ms == 40.0 and s.burst == 2.0 for s in shares)
    assert Gate(max_running=5).share(3, 4) == Gate(max_running=1)  # no rate: none to share


@pytest.mark.parametrize(
    "after", [timedelta(seconds=-1), -1, float("nan"), float("inf"), "2s", datetime(2030, 1, 1)]
)
def test_rate_limited_refuses_a_bad_wait(after: object) -> None:
    with pytest.raises(duetime.ValidationError) as refused:
        duetime.RateLimited(after=after)  # type: ignore[arg-type]
    assert refused.value.field == "after"


def test_rate_limited_takes_a_wait_or_a_moment() -> None:
    assert duetime.RateLimited(after=30).after == 30
    moment = datetime(2030, 1, 1, tzinfo=UTC)
    assert duetime.RateLimited(after=moment, reason="429").reason == "429"


def test_the_gate_of_a_type_with_group_limits_holds_them_apart() -> None:
    gate = gate_of(TaskPolicy(group_concurrency=2, group_rate=duetime.Rate(5, burst=2)))
    assert gate == Gate(group_interval_ms=200.0, group_burst=2.0, group_running=2)
    assert gate is not None and gate.grouped and gate.per_group == Gate(200.0, 2.0, 2)
    assert not Gate(max_running=3).grouped
    policy = TaskPolicy.from_options(group_rate="10/s", group_concurrency=3, rate="1/s")
    assert gate_of(policy) == Gate(1000.0, 1.0, 0, 100.0, 10.0, 3)


def test_the_group_limits_are_shared_over_partitions_too() -> None:
    gate = Gate(max_running=8, group_interval_ms=10.0, group_burst=4.0, group_running=5)
    shares = [gate.share(p, 4) for p in range(4)]
    assert [s.group_running for s in shares] == [2, 1, 1, 1]
    assert all(s.group_interval_ms == 40.0 and s.group_burst == 1.0 for s in shares)
    assert all(s.interval_ms == 0.0 and s.burst == 1.0 for s in shares)
    with pytest.raises(duetime.ValidationError) as caught:
        gate_of(TaskPolicy(group_concurrency=3), partitions=4)
    assert caught.value.field == "group_concurrency"
    with pytest.raises(duetime.ValidationError) as caught:
        gate_of(TaskPolicy(group_rate=duetime.Rate(100, burst=2)), partitions=4)
    assert caught.value.field == "group_rate"
