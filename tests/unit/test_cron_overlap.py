"""The overlap policies of a cron schedule: what follows a run that outlasted its period."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from duetime.clock import NEVER_MS
from duetime.errors import SchemaError
from duetime.record import Record
from duetime.stores.base import Claim, Outcome
from duetime.triggers.base import Follow, Next, Trigger
from duetime.triggers.cron.expression import parse_cron
from duetime.triggers.cron.policy import MAX_BUFFERED, After, abort_at, after_overlap
from duetime.triggers.cron.trigger import CronTrigger
from duetime.worker import outcome

S = 1000
T = 1_800_000_000_000  # a whole second (and minute)
EVERY_SECOND = "* * * * * *"


def spec(overlap: str, missed: str = "skip", expression: str = EVERY_SECOND) -> CronTrigger:
    return CronTrigger(parse_cron(expression, "UTC"), missed, overlap)  # type: ignore[arg-type]


def test_buffer_one_keeps_the_first_tick_that_came_due_and_skips_the_others() -> None:
    # Ran T from T+5 ms to T+3.5 s: T+1, T+2 and T+3 came due meanwhile.
    assert after_overlap(spec("buffer_one"), T, T + 5, T + 3500) == After(T + S, 2, (T + S,))


def test_buffer_all_keeps_every_tick_that_came_due_in_order() -> None:
    waiting = (T + S, T + 2 * S, T + 3 * S)
    assert after_overlap(spec("buffer_all"), T, T + 5, T + 3500) == After(T + S, 0, waiting)


def test_buffer_all_keeps_at_most_a_hundred_ticks_and_counts_the_rest_skipped() -> None:
    after = after_overlap(spec("buffer_all"), T, T + 5, T + 150 * S + 500)
    assert len(after.waiting) == MAX_BUFFERED
    assert after.waiting == tuple(T + n * S for n in range(1, MAX_BUFFERED + 1))  # the oldest
    assert after.skipped == 150 - MAX_BUFFERED
    assert after.next_ms == T + S


def test_a_tick_that_waited_adds_the_ticks_of_its_own_run_behind_the_others() -> None:
    # T+1 ran from T+3.5 s (its predecessor's end) to T+5.2 s; T+2 and T+3 still wait.
    all_of_them = after_overlap(
        spec("buffer_all"),
        T + S,
        T + 3500,
        T + 5200,
        waiting=(T + 2 * S, T + 3 * S),
        since_ms=T + 3500,
    )
    assert all_of_them == After(T + 2 * S, 0, (T + 2 * S, T + 3 * S, T + 4 * S, T + 5 * S))
    # buffer_one: nothing waits behind T+1, so T+4 does and T+5 is skipped.
    one = after_overlap(spec("buffer_one"), T + S, T + 3500, T + 5200, since_ms=T + 3500)
    assert one == After(T + 4 * S, 1, (T + 4 * S,))
    # A full buffer skips everything new.
    full = tuple(T + n * S for n in range(2, MAX_BUFFERED + 2))
    after = after_overlap(
        spec("buffer_all"), T + S, T + 3500, T + 5200, waiting=full, since_ms=T + 3500
    )
    assert after == After(T + 2 * S, 2, full)


def test_a_run_within_its_period_is_followed_by_the_next_tick_under_every_policy() -> None:
    for overlap in ("skip", "buffer_one", "buffer_all", "cancel_other"):
        assert after_overlap(spec(overlap), T, T + 5, T + 500) == After(T + S, 0), overlap


def test_a_buffered_run_that_ends_with_nothing_waiting_goes_on_with_the_next_tick() -> None:
    after = after_overlap(spec("buffer_all"), T + S, T + 3500, T + 3600, since_ms=T + 3500)
    assert after == After(T + 4 * S, 0)


def test_cancel_other_runs_the_tick_that_aborted_the_run_once_it_has_ended() -> None:
    # Aborted as T+1 came due; its cleanup took 20 ms.
    assert after_overlap(spec("cancel_other"), T, T + 5, T + S + 20) == After(T + S, 0)
    # A cleanup that took past T+2: the latest tick runs, the one before is skipped.
    assert after_overlap(spec("cancel_other"), T, T + 5, T + 2500) == After(T + 2 * S, 1)


def test_cancel_other_aborts_a_run_as_the_next_tick_comes_due() -> None:
    assert abort_at(spec("cancel_other"), T, T + 5) == T + S
    # A run that started late (a catch-up) is aborted at the first tick after its start.
    assert abort_at(spec("cancel_other", missed="all"), T, T + 2500) == T + 3 * S
    for overlap in ("skip", "allow", "buffer_one", "buffer_all"):
        assert abort_at(spec(overlap), T, T + 5) is None


def test_a_backlog_tick_comes_before_the_ticks_a_run_buffered() -> None:
    # missed="all" catching up: T+1 was due before this run of T began.
    assert after_overlap(spec("buffer_all", missed="all"), T, T + 2500, T + 2600) == After(T + S, 0)
    # A crashed run run again: the same.
    assert after_overlap(spec("buffer_one"), T, T + 31 * S, T + 33 * S, again=True) == After(
        T + S, 0
    )


def test_waiting_ticks_are_kept_in_the_record_and_checked_when_read() -> None:
    cron = CronTrigger(
        parse_cron(EVERY_SECOND, "UTC"), "skip", "buffer_all", waiting=(T, T + S), since_ms=T + 1500
    )
    doc = cron.to_json()
    assert doc["b"] == [T, T + S] and doc["bs"] == T + 1500
    assert CronTrigger.from_json(doc) == cron
    assert "b" not in spec("buffer_all").to_json()
    for bad in ("x", [T, "y"], [-1], list(range(MAX_BUFFERED + 2))):
        with pytest.raises(SchemaError):
            CronTrigger.from_record({"c": {**doc, "b": bad}})


def test_a_schedule_started_again_gives_up_the_ticks_that_waited() -> None:
    cron = CronTrigger(
        parse_cron(EVERY_SECOND, "UTC"), "skip", "buffer_all", waiting=(T,), since_ms=T + 500
    )
    following = cron.start("{}", T + 10 * S + 1)
    assert following.occurrence_ms == T + 11 * S
    assert isinstance(following.trigger, CronTrigger)
    assert following.trigger.waiting == () and following.trigger.since_ms is None


class FakeJob:
    """The Job a worker offers the cron trigger: a handler that takes ``took`` ms of the
    store's clock and fails with ``error`` if given; ``failed`` retries."""

    def __init__(self, cron: CronTrigger, tick_ms: int, now_ms: int, took: int, **record: Any):
        self.record = Record("{}", cron, tick_ms, **record)
        self.claim = Claim("sched", 1, 0, tick_ms, self.record.encode())
        self.task_name = "sched"
        self.payload_json = "{}"
        self.payload: dict[str, Any] = {}
        self.failures = self.record.failures
        self.occurrence_ms = tick_ms
        self.max_payload_bytes = 1000
        self.has_hook = False
        self.result: object = None
        self.now, self.took = now_ms, took
        self.error: Exception | None = None
        self.ran: list[tuple[int, int | None]] = []

    def now_ms(self) -> int:
        return self.now

    async def call(self, occurrence_ms: int, *, abort_at_ms: int | None = None) -> Exception | None:
        self.ran.append((occurrence_ms, abort_at_ms))
        self.now += self.took
        return self.error

    async def ask_hook(self, payload: dict[str, Any]) -> object:
        return None

    def done(self, following: Next | None = None, *, hand_off_ms: int | None = None) -> Outcome:
        return outcome.success(self.claim, following)

    async def failed(
        self, error: Exception, occurrence_ms: int, state: Trigger | None, follow: Follow | None
    ) -> Outcome:
        return outcome.retry(self.claim, self.record, occurrence_ms, state, 1, self.now, "boom")

    def missed_ticks(self, latest_ms: int, count: int) -> None: ...

    def tell(self, kind: Any, **fields: Any) -> None: ...


def _next(result: Outcome) -> tuple[int | None, int | None, CronTrigger]:
    record = Record.decode(result.record)
    assert isinstance(record.trigger, CronTrigger)
    return result.due_ms, record.occurrence_ms, record.trigger


async def test_a_long_run_leaves_the_ticks_that_came_due_waiting_and_the_first_runs_at_once() -> (
    None
):
    cron = spec("buffer_all")
    job = FakeJob(cron, T, T + 5, took=3500)
    due, occurrence, state = _next(await cron.run(job))
    assert job.ran == [(T, None)]
    assert (due, occurrence) == (T + S, T + S)  # due at once (it has passed)
    assert state.waiting == (T + S, T + 2 * S, T + 3 * S) and state.since_ms == T + 3505

    # Claimed at once, late as it is: it runs without the missed-tick rule.
    job = FakeJob(state, T + S, T + 3510, took=10)
    due, occurrence, state = _next(await state.run(job))
    assert job.ran == [(T + S, None)]
    assert (due, occurrence) == (T + 2 * S, T + 2 * S)
    assert state.waiting == (T + 2 * S, T + 3 * S) and state.skipped_count == 0


async def test_a_failed_run_of_a_waiting_tick_is_retried_ahead_of_the_others() -> None:
    cron = replace(spec("buffer_all"), waiting=(T + S, T + 2 * S), since_ms=T + 2500)
    job = FakeJob(cron, T + S, T + 2510, took=1000)
    job.error = RuntimeError("boom")
    result = await cron.run(job)
    assert result.op == "retry"
    record = Record.decode(result.record)
    assert record.occurrence_ms == T + S
    assert isinstance(record.trigger, CronTrigger)
    # T+3 came due during the failed run: it waits behind T+2; the retry of T+1 heads them.
    assert record.trigger.waiting == (T + S, T + 2 * S, T + 3 * S)
    assert record.trigger.since_ms == T + 3510

    retried = FakeJob(record.trigger, T + S, T + 4000, took=10, failures=1)
    due, occurrence, state = _next(await record.trigger.run(retried))
    assert retried.ran == [(T + S, None)]
    assert (due, occurrence) == (T + 2 * S, T + 2 * S)
    assert state.waiting == (T + 2 * S, T + 3 * S, T + 4 * S)


async def test_cancel_other_hands_its_run_the_time_to_abort_it() -> None:
    cron = spec("cancel_other")
    job = FakeJob(cron, T, T + 5, took=1020)  # aborted at T+1, 20 ms to clean up
    due, occurrence, state = _next(await cron.run(job))
    assert job.ran == [(T, T + S)]
    assert (due, occurrence) == (T + S, T + S)  # the tick that aborted it, at once
    assert state.waiting == () and state.skipped_count == 0


def test_the_next_runs_of_a_schedule_with_ticks_waiting_are_those_ticks_then_the_next() -> None:
    one = replace(spec("buffer_one"), waiting=(T + S,), since_ms=T + 3500)
    assert one.upcoming(T + S, T + 3600, 3, running=False) == [T + S, T + 4 * S, T + 5 * S]
    waiting = (T + S, T + 2 * S, T + 3 * S)
    every = replace(spec("buffer_all"), waiting=waiting, since_ms=T + 3500)
    assert every.upcoming(T + S, T + 3600, 2, running=False) == [T + S, T + 2 * S]
    assert every.upcoming(T + S, T + 3600, 4, running=False) == [*waiting, T + 4 * S]


async def test_waiting_ticks_count_toward_the_limit_and_stop_at_the_end() -> None:
    cron = replace(spec("buffer_all"), limit=2)
    _, _, state = _next(await cron.run(FakeJob(cron, T, T + 5, took=3500)))
    assert state.run_count == 1 and state.waiting[0] == T + S
    due, _, state = _next(await state.run(FakeJob(state, T + S, T + 3510, took=10)))
    assert state.finished and state.run_count == 2 and due == NEVER_MS  # its limit

    ending = replace(spec("buffer_all"), end_ms=T + 1500)
    _, _, state = _next(await ending.run(FakeJob(ending, T, T + 5, took=3500)))
    # T+1 is before the end and waits; T+2 and T+3 are not, and neither wait nor count.
    assert (state.waiting, state.skipped_count) == ((T + S,), 0)
    due, _, state = _next(await state.run(FakeJob(state, T + S, T + 3510, took=10)))
    assert state.finished and due == NEVER_MS and state.skipped_count == 0


def test_ticks_past_the_end_are_no_ticks_after_a_run_that_outlasts_it() -> None:
    # The last tick, T, ran from T+5 ms to T+2.5 s: T+1 and T+2 are past the end.
    for overlap in ("skip", "buffer_one", "buffer_all", "cancel_other"):
        for missed in ("skip", "once", "all"):
            last = replace(spec(overlap, missed), end_ms=T)
            assert after_overlap(last, T, T + 5, T + 2500) == After(T + 3 * S, 0), overlap
    # Up to the end they are ticks as before: T+1 is the last one.
    buffered = replace(spec("buffer_one"), end_ms=T + S)
    assert after_overlap(buffered, T, T + 5, T + 2500) == After(T + S, 0, (T + S,))
    cancelled = replace(spec("cancel_other"), end_ms=T + S)
    assert after_overlap(cancelled, T, T + 5, T + 2500) == After(T + S, 0)


def test_no_tick_past_the_end_aborts_the_last_run() -> None:
    assert abort_at(replace(spec("cancel_other"), end_ms=T), T, T + 5) is None
    assert abort_at(replace(spec("cancel_other"), end_ms=T + S), T, T + 5) == T + S


async def test_the_last_run_of_a_cancel_other_schedule_ends_as_its_handler_does() -> None:
    cron = replace(spec("cancel_other"), end_ms=T)
    job = FakeJob(cron, T, T + 5, took=2500)
    due, _, state = _next(await cron.run(job))
    assert job.ran == [(T, None)]  # no time to abort it at
    assert (due, state.finished, state.run_count, state.skipped_count) == (NEVER_MS, True, 1, 0)


async def test_no_tick_after_the_limit_aborts_the_run_that_reaches_it() -> None:
    cron = replace(spec("cancel_other"), limit=2, run_count=1)
    job = FakeJob(cron, T, T + 5, took=2500)
    due, _, state = _next(await cron.run(job))
    assert job.ran == [(T, None)]
    assert (due, state.finished, state.run_count) == (NEVER_MS, True, 2)
    not_yet = replace(spec("cancel_other"), limit=2)
    job = FakeJob(not_yet, T, T + 5, took=10)
    await not_yet.run(job)
    assert job.ran == [(T, T + S)]
