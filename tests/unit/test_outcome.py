"""What follows a run: next occurrences, the hook's answer, retries and dead letters."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from duetime import Abort, Backoff, Reschedule, Retry, TaskPolicy, ValidationError
from duetime.record import Record
from duetime.stores.base import Claim
from duetime.triggers.base import Next
from duetime.triggers.periodic import Periodic, apply_hook
from duetime.worker.outcome import (
    TRACE_BYTES,
    TRACE_FRAMES,
    attempt,
    bounded,
    given_up,
    occurrence_id,
    retries_left,
    retry,
    retry_due,
    success,
    trace,
)

DAY = 86_400_000


def claim(record: str, due: int = 1000, stalls: int = 0) -> Claim:
    return Claim("t", 7, stalls, due, record)


def test_the_next_occurrence_keeps_the_phase() -> None:
    due = Periodic(DAY).next_after(10 * DAY, now_ms=10 * DAY + 5000)
    assert due is not None and (due.due_ms, due.skipped) == (11 * DAY, 0)


def test_missed_occurrences_fold_into_the_latest_one() -> None:
    due = Periodic(DAY).next_after(10 * DAY, now_ms=13 * DAY + 5)
    assert due is not None and (due.due_ms, due.skipped) == (13 * DAY, 2)


def test_the_series_ends_after_until() -> None:
    series = Periodic(DAY, until_ms=12 * DAY)
    assert series.next_after(11 * DAY, 11 * DAY) is not None
    assert series.next_after(12 * DAY, 12 * DAY) is None


def test_the_hook_can_go_on_stop_merge_and_move() -> None:
    payload = {"a": {"x": 1}, "l": [1]}
    text = '{"a":{"x":1},"l":[1]}'
    assert apply_hook(True, payload, text, 5, 1000) == (text, 5)
    assert apply_hook(None, payload, text, 5, 1000) == (text, 5)
    assert apply_hook(False, payload, text, 5, 1000) is None
    at = datetime(2030, 1, 1, tzinfo=UTC)
    merged = apply_hook(
        Reschedule(payload={"a": {"y": 2}, "l": [2]}, at=at), payload, text, 5, 1000
    )
    assert merged == ('{"a":{"x":1,"y":2},"l":[2]}', int(at.timestamp() * 1000))
    with pytest.raises(ValidationError):
        apply_hook({"payload": {}}, payload, text, 5, 1000)
    with pytest.raises(ValidationError):
        apply_hook(Reschedule(payload={"big": "x" * 100}), payload, text, 5, 50)


def test_attempts_count_failures_and_stalls() -> None:
    assert attempt(claim('{"p":{}}'), Record("{}")) == 1
    assert attempt(claim('{"p":{}}', stalls=1), Record("{}", failures=2)) == 4


def test_a_failure_is_retried_with_backoff_keeping_its_occurrence() -> None:
    policy = TaskPolicy(retries=2, backoff=Backoff(base=timedelta(seconds=1), jitter=0))
    record = Record('{"k":1}', Periodic(DAY))
    assert retries_left(RuntimeError(), policy, 1)
    out = retry(claim(record.encode(), due=500), record, 500, record.trigger, 1, 11_000, "boom")
    assert (out.op, out.due_ms, out.error) == ("retry", 11_000, "boom")
    again = Record.decode(out.record)
    assert (again.occurrence_ms, again.failures, again.trigger) == (500, 1, Periodic(DAY))
    assert retry_due(RuntimeError(), policy, 1, 10_000) == 11_000
    assert retry_due(RuntimeError(), policy, 2, 20_000) == 22_000  # the back-off doubled
    assert not retries_left(RuntimeError(), policy, 3)


def test_a_retry_may_name_its_own_time() -> None:
    policy = TaskPolicy(retries=2)
    at = datetime(2030, 1, 1, tzinfo=UTC)
    assert retry_due(Retry(after=timedelta(seconds=3)), policy, 1, 10_000) == 13_000
    assert retry_due(Retry(after=at), policy, 1, 10_000) == int(at.timestamp() * 1000)
    with pytest.raises(ValidationError):  # refused where it is raised
        Retry(after=datetime(2030, 1, 1))
    for bad in (timedelta(seconds=-1), float("nan"), "soon"):
        with pytest.raises(ValidationError):
            Retry(after=bad)  # type: ignore[arg-type]
    # A wait that ends past the year 9999 is refused (the worker then uses the back-off).
    late = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    with pytest.raises(ValidationError, match="past the year 9999"):
        retry_due(
            Retry(after=late - datetime(2026, 1, 1, tzinfo=UTC)), policy, 1, 1_900_000_000_000
        )


def test_a_one_off_task_out_of_retries_goes_to_the_dead_letters() -> None:
    record = Record('{"k":1}', occurrence_ms=500, failures=1)
    out = given_up(claim(record.encode()), record, 500, 2, "boom", series=False)
    assert (out.op, out.error) == ("dead", "boom")
    assert Record.decode(out.record) == Record('{"k":1}', occurrence_ms=500, failures=2)


def test_a_periodic_task_out_of_retries_files_the_occurrence_and_goes_on() -> None:
    record = Record('{"k":1}', Periodic(DAY))
    following = Next(2 * DAY, '{"k":1}', Periodic(DAY))
    out = given_up(
        claim(record.encode(), due=DAY), record, DAY, 1, "boom", series=True, following=following
    )
    assert (out.op, out.due_ms, out.dead_id, out.error) == ("next", 2 * DAY, f"t@{DAY}", "boom")
    filed = Record.decode(out.dead_record)
    assert (filed.trigger, filed.occurrence_ms, filed.failures) == (None, DAY, 1)


def test_abort_skips_the_remaining_retries() -> None:
    assert not retries_left(Abort("no"), TaskPolicy(retries=5), 1)


def test_success_of_a_one_off_and_of_a_periodic_task() -> None:
    series = Periodic(DAY, until_ms=9 * DAY)
    record = Record("{}", series)
    assert success(claim(record.encode()), None).op == "done"
    out = success(claim(record.encode()), Next(2 * DAY, '{"n":2}', series))
    assert (out.op, out.due_ms) == ("next", 2 * DAY)
    assert Record.decode(out.record) == Record('{"n":2}', series)


def test_backoff_grows_is_capped_and_jittered() -> None:
    exact = Backoff(base=timedelta(seconds=1), cap=timedelta(seconds=5), jitter=0)
    assert [exact.delay_ms(n) for n in range(1, 6)] == [1000, 2000, 4000, 5000, 5000]
    jittered = Backoff(base=timedelta(seconds=1), jitter=0.5)
    delays = {jittered.delay_ms(3) for _ in range(50)}
    assert all(2000 <= d <= 4000 for d in delays) and len(delays) > 1


def test_an_occurrence_id_is_the_task_id_and_its_due_time_once() -> None:
    assert occurrence_id("weekly", 1000) == "weekly@1000"
    assert occurrence_id("weekly@1000", 1000) == "weekly@1000"  # a filed occurrence, retried
    assert occurrence_id("a@b.c", 5) == "a@b.c@5"


# -- what a failure keeps of its traceback ------------------------------------------------


def _raised(fn: Callable[[], object]) -> BaseException:
    try:
        fn()
    except BaseException as exc:
        return exc
    raise AssertionError("nothing raised")


def _frames(trace: str) -> int:
    return sum(line.startswith('  File "') for line in trace.splitlines())


def test_a_deep_recursions_traceback_keeps_its_last_8_frames_within_8_kb() -> None:
    def down(n: int) -> int:
        return down(n + 1)

    exc = _raised(lambda: down(0))
    assert isinstance(exc, RecursionError)
    text = trace(exc)
    assert text is not None
    assert text.startswith("Traceback (most recent call last):\n")
    assert text.endswith("RecursionError: maximum recursion depth exceeded\n")
    # Python folds the repeated frames: three shown, and "repeated 5 more times".
    assert _frames(text) == 3 and "[Previous line repeated 5 more times]" in text
    assert len(text.encode()) <= TRACE_BYTES == 8192


def test_a_traceback_keeps_the_last_8_of_many_distinct_frames() -> None:
    def ping(n: int) -> None:
        if n == 0:
            raise ValueError("deep")
        pong(n - 1)

    def pong(n: int) -> None:  # frames alternate, so Python folds none of them
        ping(n)

    text = trace(_raised(lambda: ping(20)))
    assert text is not None and _frames(text) == TRACE_FRAMES == 8
    assert text.rstrip().endswith("ValueError: deep") and "in ping\n" in text


def test_a_huge_message_is_cut_in_the_middle_never_inside_a_character() -> None:
    exc = _raised(lambda: _fail("é" * 20_000 + " END"))
    text = trace(exc)
    assert text is not None
    size = len(text.encode())
    assert TRACE_BYTES - 8 <= size <= TRACE_BYTES
    assert text.startswith("Traceback (most recent call last):\n") and "in _fail" in text
    assert text.endswith(" END\n") and "bytes cut ...]" in text


def test_text_that_utf8_cannot_carry_is_escaped_in_a_traceback() -> None:
    text = trace(_raised(lambda: _fail("bad \udcff byte")))
    assert text is not None and "bad \\udcff byte" in text
    text.encode()  # would raise on a lone surrogate


def test_a_traceback_keeps_the_exception_chain() -> None:
    def wrap() -> None:
        try:
            _fail("inner")
        except ValueError as exc:
            raise RuntimeError("outer") from exc

    text = trace(_raised(wrap))
    assert text is not None
    assert "ValueError: inner" in text and text.rstrip().endswith("RuntimeError: outer")
    assert "direct cause" in text


def test_a_retry_or_an_abort_keeps_no_traceback() -> None:
    assert trace(_raised(lambda: _raise(Retry(reason="later")))) is None
    assert trace(_raised(lambda: _raise(Abort("no")))) is None


@pytest.mark.parametrize("size", [0, 1, 100, 8191, 8192, 8193, 9000, 50_000])
@pytest.mark.parametrize("char", ["a", "é", "€", "𝄞"])
def test_bounded_text_fits_its_bytes_and_stays_utf8(size: int, char: str) -> None:
    text = char * size
    out = bounded(text, 8192)
    assert len(out.encode()) <= 8192
    if len(text.encode()) <= 8192:
        assert out == text
    else:
        assert out.startswith(char) and out.endswith(char) and "bytes cut" in out


def _fail(message: str) -> None:
    raise ValueError(message)


def _raise(exc: BaseException) -> None:
    raise exc


def test_the_mark_of_unique_for_goes_with_the_end_and_through_retries() -> None:
    marked = Record('{"a":1}', unique_ms=60_000)
    c = claim(marked.encode())

    assert success(c, None, unique_ms=60_000).unique_ms == 60_000
    following = success(c, Next(2000, '{"a":1}', Periodic(DAY)), unique_ms=60_000)
    assert (following.op, following.unique_ms) == ("next", 0)
    assert Record.decode(following.record).unique_ms == 60_000
    again = retry(c, marked, 1000, None, 1, 5000, "boom")
    assert Record.decode(again.record).unique_ms == 60_000
    dead = given_up(c, marked, 1000, 4, "boom", series=False)
    assert (dead.op, dead.unique_ms, Record.decode(dead.record).unique_ms) == (
        "dead",
        60_000,
        60_000,
    )
    filed = given_up(c, marked, 1000, 4, "boom", series=True, following=None)
    assert (filed.op, filed.unique_ms, filed.dead_id) == ("done", 60_000, "t@1000")
    assert Record.decode(filed.dead_record).unique_ms == 0  # a filed occurrence is not the task
