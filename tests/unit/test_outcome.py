"""What follows a run: next occurrences, the hook's answer, retries and dead letters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from duetime import Backoff, Reschedule, TaskPolicy, ValidationError
from duetime.codec import Record, decode_record, encode_record
from duetime.outcome import (
    apply_hook,
    attempt,
    failure,
    next_occurrence,
    periodic_following,
    success,
)
from duetime.stores.base import Claim

DAY = 86_400_000


def claim(record: str, due: int = 1000, stalls: int = 0) -> Claim:
    return Claim("t", 7, stalls, due, record)


def test_the_next_occurrence_keeps_the_phase() -> None:
    record = Record({}, every_ms=DAY)
    nxt = next_occurrence(record, occ_ms=10 * DAY, now_ms=10 * DAY + 5000)
    assert nxt is not None and (nxt.due_ms, nxt.skipped) == (11 * DAY, 0)


def test_missed_occurrences_fold_into_the_latest_one() -> None:
    record = Record({}, every_ms=DAY)
    nxt = next_occurrence(record, occ_ms=10 * DAY, now_ms=13 * DAY + 5)
    assert nxt is not None and (nxt.due_ms, nxt.skipped) == (13 * DAY, 2)


def test_the_series_ends_after_until() -> None:
    record = Record({}, every_ms=DAY, until_ms=12 * DAY)
    assert next_occurrence(record, 11 * DAY, 11 * DAY) is not None
    assert next_occurrence(record, 12 * DAY, 12 * DAY) is None
    assert next_occurrence(Record({}), 0, 0) is None


def test_the_hook_can_go_on_stop_merge_and_move() -> None:
    payload = {"a": {"x": 1}, "l": [1]}
    assert apply_hook(True, payload, 5, 1000) == ('{"a":{"x":1},"l":[1]}', 5)
    assert apply_hook(None, payload, 5, 1000) == ('{"a":{"x":1},"l":[1]}', 5)
    assert apply_hook(False, payload, 5, 1000) is None
    at = datetime(2030, 1, 1, tzinfo=UTC)
    merged = apply_hook(Reschedule(payload={"a": {"y": 2}, "l": [2]}, at=at), payload, 5, 1000)
    assert merged == ('{"a":{"x":1,"y":2},"l":[2]}', int(at.timestamp() * 1000))
    with pytest.raises(ValidationError):
        apply_hook({"payload": {}}, payload, 5, 1000)
    with pytest.raises(ValidationError):
        apply_hook(Reschedule(payload={"big": "x" * 100}), payload, 5, 50)


def test_attempts_count_failures_and_stalls() -> None:
    assert attempt(claim(encode_record("{}")), decode_record(encode_record("{}"))) == 1
    rec = encode_record("{}", failures=2)
    assert attempt(claim(rec, stalls=1), decode_record(rec)) == 4


def test_a_failure_is_retried_with_backoff_keeping_its_occurrence() -> None:
    policy = TaskPolicy(retries=2, backoff=Backoff(base=timedelta(seconds=1), jitter=0))
    rec = encode_record('{"k":1}', every_ms=DAY)
    out = failure(claim(rec, due=500), decode_record(rec), policy, 10_000, "boom")
    assert (out.op, out.due_ms, out.error) == ("retry", 11_000, "boom")
    again = decode_record(out.record)
    assert (again.occurrence_ms, again.failures, again.every_ms) == (500, 1, DAY)
    second = failure(claim(out.record, due=11_000), again, policy, 20_000, "boom")
    assert second.op == "retry" and second.due_ms == 22_000  # 2 s: the back-off doubled


def test_a_one_off_task_out_of_retries_goes_to_the_dead_letters() -> None:
    policy = TaskPolicy(retries=1)
    rec = encode_record('{"k":1}', occurrence_ms=500, failures=1)
    out = failure(claim(rec), decode_record(rec), policy, 10_000, "boom")
    assert (out.op, out.error) == ("dead", "boom")
    assert decode_record(out.record).failures == 2


def test_a_periodic_task_out_of_retries_files_the_occurrence_and_goes_on() -> None:
    policy = TaskPolicy(retries=0)
    rec = encode_record('{"k":1}', every_ms=DAY)
    out = failure(
        claim(rec, due=DAY),
        decode_record(rec),
        policy,
        DAY + 5,
        "boom",
        following=periodic_following(decode_record(rec), '{"k":1}', 2 * DAY),
    )
    assert (out.op, out.due_ms, out.dead_id, out.error) == ("next", 2 * DAY, f"t@{DAY}", "boom")
    filed = decode_record(out.dead_record)
    assert (filed.every_ms, filed.occurrence_ms, filed.failures) == (None, DAY, 1)


def test_abort_skips_the_remaining_retries() -> None:
    rec = encode_record("{}")
    out = failure(claim(rec), decode_record(rec), TaskPolicy(retries=5), 0, "no", give_up=True)
    assert out.op == "dead"


def test_success_of_a_one_off_and_of_a_periodic_task() -> None:
    rec = encode_record("{}", every_ms=DAY, until_ms=9 * DAY)
    assert success(claim(rec), None).op == "done"
    out = success(claim(rec), periodic_following(decode_record(rec), '{"n":2}', 2 * DAY))
    assert (out.op, out.due_ms) == ("next", 2 * DAY)
    assert decode_record(out.record) == Record({"n": 2}, DAY, 9 * DAY)


def test_backoff_grows_is_capped_and_jittered() -> None:
    exact = Backoff(base=timedelta(seconds=1), cap=timedelta(seconds=5), jitter=0)
    assert [exact.delay_ms(n) for n in range(1, 6)] == [1000, 2000, 4000, 5000, 5000]
    jittered = Backoff(base=timedelta(seconds=1), jitter=0.5)
    delays = {jittered.delay_ms(3) for _ in range(50)}
    assert all(2000 <= d <= 4000 for d in delays) and len(delays) > 1


def test_an_occurrence_id_is_the_task_id_and_its_due_time_once() -> None:
    from duetime.outcome import occurrence_id

    assert occurrence_id("weekly", 1000) == "weekly@1000"
    assert occurrence_id("weekly@1000", 1000) == "weekly@1000"  # a filed occurrence, retried
    assert occurrence_id("a@b.c", 5) == "a@b.c@5"
