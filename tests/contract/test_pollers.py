"""Pollers on each store: what the scheduler sees (limit, active instructions, attempt),
dispatch, the delay and its attempts, freed slots, events and errors, handler options."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

import duetime
from duetime.clock import epoch_ms
from duetime.stores.base import Outcome
from duetime.testing import harness
from tests.helpers import count_is, eventually, running

QUICK = 0.02  # seconds between calls where a test does not look at the delay


class Source:
    """Instructions a scheduler hands out, and what it was called with."""

    def __init__(self, items: list[str]) -> None:
        self.items = list(items)
        self.calls: list[duetime.PollContext] = []
        self.times: list[float] = []

    def take(self, ctx: duetime.PollContext, most: int | None = None) -> list[str]:
        self.calls.append(ctx)
        self.times.append(time.monotonic())
        limit = ctx.limit if most is None else min(most, ctx.limit)
        out = [i for i in self.items if i not in ctx.active_instructions][:limit]
        for item in out:
            self.items.remove(item)
        return out


async def test_instructions_run_once_within_the_concurrency_with_what_the_scheduler_saw(
    app: duetime.App,
) -> None:
    source = Source([f"user-{n}" for n in range(5)])
    release = asyncio.Event()
    started: list[str] = []
    contexts: list[duetime.Context] = []

    @app.poller("send_user_email", concurrency=2, delay=lambda attempt: QUICK)
    async def find_users(ctx: duetime.PollContext) -> list[str]:
        return source.take(ctx)

    @find_users.handler
    async def send(instruction: str, ctx: duetime.Context) -> None:
        started.append(instruction)
        contexts.append(ctx)
        await release.wait()

    async with running(app):
        await eventually(lambda: len(started) == 2, what="two instructions started")
        await asyncio.sleep(0.2)  # both slots taken: the scheduler is not called
        assert started == ["user-0", "user-1"]
        first = source.calls[0]
        assert (first.task_name, first.concurrency, first.limit) == ("send_user_email", 2, 2)
        assert (first.active_instructions, first.attempt) == ([], 0)
        assert all(c.limit > 0 for c in source.calls)
        info = await app.get("send_user_email", "user-0")
        assert info is not None and info.state == "running"
        release.set()
        await eventually(lambda: len(started) == 5, what="every instruction started")
        await eventually(lambda: count_is(app, "send_user_email", "running", 0))

    assert sorted(started) == [f"user-{n}" for n in range(5)]  # each once
    assert {c.task_id for c in contexts} == set(started)
    assert all(c.task_type == "send_user_email" and c.attempt == 1 for c in contexts)
    assert await app.counts("send_user_email") == {"due": 0, "running": 0, "dead": 0}


async def test_the_scheduler_sees_the_active_instructions_and_the_free_slots(
    app: duetime.App,
) -> None:
    source = Source(["a", "b", "c"])
    hold: dict[str, asyncio.Event] = {i: asyncio.Event() for i in "abc"}

    @app.poller("jobs", concurrency=3, delay=lambda attempt: QUICK)
    async def find(ctx: duetime.PollContext) -> list[str]:
        return source.take(ctx, most=1)  # one at a time, so later calls see the earlier ones

    @find.handler
    async def run(instruction: str) -> None:
        await hold[instruction].wait()

    async with running(app):
        await eventually(lambda: not source.items, what="every instruction handed out")
        await eventually(lambda: count_is(app, "jobs", "running", 3))
        seen = [(c.limit, sorted(c.active_instructions)) for c in source.calls if c.limit]
        assert seen[:3] == [(3, []), (2, ["a"]), (1, ["a", "b"])]
        calls = len(source.calls)
        hold["b"].set()
        await eventually(lambda: len(source.calls) > calls, what="a call after a slot freed")
        assert source.calls[-1].limit == 1
        assert sorted(source.calls[-1].active_instructions) == ["a", "c"]
        hold["a"].set()
        hold["c"].set()


async def test_calculate_limit_sync_or_async_replaces_the_free_slot_count(
    app: duetime.App,
) -> None:
    seen: list[tuple[int, list[str]]] = []
    limits: list[int] = []

    async def one_less(concurrency: int, active: list[str]) -> int:
        seen.append((concurrency, list(active)))
        return concurrency - len(active) - 1

    @app.poller("halved", concurrency=4, delay=lambda a: QUICK, calculate_limit=one_less)
    async def find(ctx: duetime.PollContext) -> list[str]:
        limits.append(ctx.limit)
        return []

    @app.poller("never", concurrency=2, delay=lambda a: QUICK, calculate_limit=lambda c, a: 0)
    async def never(ctx: duetime.PollContext) -> list[str]:
        raise AssertionError("called with a limit of 0")

    async with running(app):
        await eventually(lambda: len(limits) >= 3, what="three calls")
    assert seen[0] == (4, [])
    assert set(limits) == {3}


async def test_active_takes_the_instructions_run_elsewhere_and_no_handler_means_events_only(
    app: duetime.App,
) -> None:
    elsewhere = ["row-1", "row-2"]
    asked: list[str] = []
    events: list[duetime.TaskEvent] = []

    async def active(task_name: str) -> list[str]:
        asked.append(task_name)
        return list(elsewhere)

    source = Source(["row-3", "row-4", "row-5"])

    @app.poller("external", concurrency=3, delay=lambda a: QUICK, active=active)
    def find(ctx: duetime.PollContext) -> list[str]:  # a plain def runs in a thread
        return source.take(ctx)

    def run_elsewhere(event: duetime.TaskEvent) -> None:
        events.append(event)
        elsewhere.append(event.instruction)

    app.events.on("task", run_elsewhere)
    async with running(app):
        await eventually(lambda: len(events) == 1, what="one task event")
        looks = len(asked)  # the slots are looked at again, and none is free
        await eventually(lambda: len(asked) >= looks + 3, what="three looks more")
        assert [e.instruction for e in events] == ["row-3"]  # one free slot of three
        elsewhere[:] = []  # all three done
        await eventually(lambda: len(events) == 3, what="the freed slots filled")
    assert [(e.task_name, e.instruction) for e in events] == [
        ("external", "row-3"),
        ("external", "row-4"),
        ("external", "row-5"),
    ]
    assert asked and set(asked) == {"external"}
    assert source.calls[0].active_instructions == ["row-1", "row-2"]
    assert "external" not in app.types  # no handler: nothing was dispatched
    store = await app.open()
    assert await store.count("external") == {"due": 0, "running": 0, "dead": 0}


async def test_delay_gets_the_unproductive_calls_in_a_row_and_sets_the_waits(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    attempts: list[int] = []
    ticks: list[int] = []
    batches = [["x"], [], [], [], ["y"], [], []]

    async def delay(attempt: int) -> timedelta:  # async, and a timedelta
        attempts.append(attempt)
        return timedelta(milliseconds=100 * attempt)

    @app.poller("backoff", delay=delay)  # no handler: no instruction ends to hasten a call
    async def find(ctx: duetime.PollContext) -> list[str]:
        ticks.append(app.clock.now_ms())
        return batches.pop(0) if batches else []

    async with harness(app, url=store_url) as h:
        t0 = epoch_ms(h.now)
        await h.run_due()
        # The wait after each call is attempt * 100 ms: none after a productive call.
        for offset in (100, 300, 600, 700):
            h.clock.set(t0 + offset - 1)
            before = len(ticks)
            await h.run_due()
            assert len(ticks) == before, (offset, ticks)  # never before its delay
            h.clock.set(t0 + offset)
            await h.run_due()
    assert [t - t0 for t in ticks[:7]] == [0, 0, 100, 300, 600, 600, 700]
    assert attempts[:7] == [0, 1, 2, 3, 0, 1, 2]


async def test_a_freed_slot_is_filled_at_once_not_after_the_delay(
    store_url: str, namespace: str
) -> None:
    app = duetime.App(namespace=namespace)
    source = Source([f"i{n}" for n in range(4)])
    started: list[int] = []

    @app.poller("refill", concurrency=1, delay=lambda attempt: 30)
    async def find(ctx: duetime.PollContext) -> list[str]:
        return source.take(ctx)

    @find.handler
    async def work(instruction: str) -> None:
        started.append(app.clock.now_ms())

    async with harness(app, url=store_url) as h:
        await h.run_due()
        # One after the other at the same moment: a 30 s delay would have stopped it after
        # the first.
        assert started == [epoch_ms(h.now)] * 4


async def test_the_same_instruction_is_not_queued_twice_while_pending_or_running(
    app: duetime.App,
) -> None:
    release = asyncio.Event()
    runs: list[str] = []
    calls: list[int] = []
    events: list[duetime.TaskEvent] = []

    @app.poller("dup", concurrency=5, delay=lambda attempt: QUICK)
    async def find(ctx: duetime.PollContext) -> list[str]:
        calls.append(ctx.limit)
        return ["same", "same"]  # ignores the active instructions, and repeats itself

    @find.handler
    async def work(instruction: str) -> None:
        runs.append(instruction)
        await release.wait()

    app.events.on("task", events.append)
    async with running(app):
        await eventually(lambda: runs == ["same"])
        asked = len(calls)
        await eventually(lambda: len(calls) >= asked + 5, what="five calls more")
        assert runs == ["same"]
        release.set()
        await eventually(lambda: len(runs) >= 2, what="run again once done")
    assert events[0] == duetime.TaskEvent("dup", "same")


async def test_a_failing_or_misbehaving_scheduler_emits_errors_and_polling_goes_on(
    app: duetime.App, caplog: pytest.LogCaptureFixture
) -> None:
    answers: list[Any] = [RuntimeError("db down"), "not a list", ["ok", 7], ["fine"]]
    errors: list[duetime.ErrorEvent] = []
    async_errors: list[duetime.ErrorEvent] = []
    done: list[str] = []

    @app.poller("flaky", delay=lambda attempt: QUICK)
    async def find(ctx: duetime.PollContext) -> list[str]:
        answer = answers.pop(0) if answers else []
        if isinstance(answer, Exception):
            raise answer
        return answer

    @find.handler
    async def work(instruction: str) -> None:
        done.append(instruction)

    @app.poller("steady", delay=lambda attempt: QUICK)
    async def steady(ctx: duetime.PollContext) -> list[str]:
        return []

    async def collect(event: duetime.ErrorEvent) -> None:
        async_errors.append(event)

    def broken(event: object) -> None:
        raise ValueError("a listener that raises")

    app.events.on("error", broken)
    app.events.on("error", errors.append)
    app.events.on("error", collect)
    async with running(app):
        await eventually(lambda: done == ["fine"], what="the poller recovered")
    assert [type(e.error) for e in errors] == [
        RuntimeError,
        duetime.UnexpectedTaskInstructionsError,
        duetime.UnexpectedTaskInstructionsError,
    ]
    assert all(e.task_name == "flaky" for e in errors) and errors == async_errors
    unexpected = errors[1].error
    assert isinstance(unexpected, duetime.UnexpectedTaskInstructionsError)
    assert isinstance(unexpected, duetime.DuetimeError)
    assert unexpected.task_name == "flaky"
    assert unexpected.unexpected_task_instructions == "not a list"
    assert errors[2].error.unexpected_task_instructions == ["ok", 7]  # type: ignore[attr-defined]
    # The scheduler's exception is logged with its traceback; duetime's own errors without.
    failed = [r for r in caplog.records if r.getMessage().startswith("flaky: the scheduler")]
    assert [r.exc_info is not None for r in failed] == [True, False, False]
    assert "in find\n" in logging.Formatter().format(failed[0])


async def test_bad_instructions_and_a_bad_delay_or_limit_are_errors_not_stops(
    app: duetime.App,
) -> None:
    errors: list[duetime.ErrorEvent] = []
    done: list[str] = []
    calls = 0

    def delay(attempt: int) -> float:
        raise ZeroDivisionError("bad delay")

    @app.poller("odd", concurrency=3, delay=delay)
    async def find(ctx: duetime.PollContext) -> list[str]:
        nonlocal calls
        calls += 1
        return ["", "x" * 2000, "job@5", "good"] if calls == 1 else []

    @find.handler
    async def work(instruction: str) -> None:
        done.append(instruction)

    @app.poller("limitless", delay=lambda a: QUICK, calculate_limit=lambda c, a: "three")
    async def limitless(ctx: duetime.PollContext) -> list[str]:
        raise AssertionError("called without a limit")

    app.events.on("error", errors.append)
    async with running(app):
        await eventually(lambda: done == ["good"])
        await eventually(lambda: any(e.task_name == "limitless" for e in errors))
    kinds = {(e.task_name, type(e.error).__name__) for e in errors}
    assert ("odd", "ValidationError") in kinds  # the empty and the oversized instruction
    refused = [e.error for e in errors if e.task_name == "odd" and "instruction" in str(e.error)]
    assert len(refused) == 3 and "reserved" in str(refused[2])  # "job@5": an occurrence's id
    assert ("odd", "ZeroDivisionError") in kinds  # the delay: the default applies
    assert ("limitless", "ValidationError") in kinds


async def test_the_handler_has_the_task_options(app: duetime.App) -> None:
    attempts: list[int] = []

    @app.poller("retried", delay=lambda attempt: QUICK)
    async def find(ctx: duetime.PollContext) -> list[str]:
        return [] if attempts else ["once"]

    @find.handler(retries=2, backoff=duetime.Backoff(base=timedelta(milliseconds=10), jitter=0))
    async def work(instruction: str, ctx: duetime.Context) -> None:
        attempts.append(ctx.attempt)
        if ctx.attempt < 3:
            raise RuntimeError("not yet")

    async with running(app):
        await eventually(lambda: attempts == [1, 2, 3], what="three attempts")
        await eventually(lambda: count_is(app, "retried", "running", 0))
    assert app.task_type("retried").policy.retries == 2
    assert await app.counts("retried") == {"due": 0, "running": 0, "dead": 0}


async def test_events_off_stops_a_listener(app: duetime.App) -> None:
    heard: list[str] = []
    items = ["a", "b"]

    calls: list[int] = []

    @app.poller("quiet", delay=lambda attempt: QUICK)
    async def find(ctx: duetime.PollContext) -> list[str]:
        calls.append(ctx.limit)
        return [items.pop(0)] if items else []

    def listen(event: duetime.TaskEvent) -> None:
        heard.append(event.instruction)
        app.events.off("task", listen)

    assert app.events.on("task", listen) is listen
    async with running(app):
        await eventually(lambda: not items)
        asked = len(calls)  # "b" was handed out: its event is dispatched before the next call
        await eventually(lambda: len(calls) >= asked + 2, what="two calls more")
    assert heard == ["a"]
    app.events.off("task", listen)  # twice: a no-op


async def test_a_poller_cannot_be_registered_once_a_worker_runs(app: duetime.App) -> None:
    @app.poller("first", delay=lambda attempt: QUICK)
    async def find(ctx: duetime.PollContext) -> list[str]:
        return []

    async with running(app):
        with pytest.raises(duetime.InvalidTaskConfigurationError, match="once a worker runs"):

            @app.poller("late")
            async def late(ctx: duetime.PollContext) -> list[str]:
                return []

        with pytest.raises(duetime.InvalidTaskConfigurationError):
            find.handler(lambda instruction: None)
    assert "late" not in app.pollers.by_name


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"concurrency": 0}, "concurrency"),
        ({"concurrency": 1.5}, "concurrency"),
        ({"concurrency": True}, "concurrency"),
        ({"delay": 5}, "delay"),
        ({"calculate_limit": "all"}, "calculate_limit"),
        ({"active": []}, "active"),
        ({"lease": 0.05}, "lease"),
    ],
)
def test_bad_settings_are_refused_at_registration(
    app: duetime.App, options: dict[str, Any], field: str
) -> None:
    with pytest.raises(duetime.InvalidTaskConfigurationError) as caught:
        app.poller("bad", **options)
    assert caught.value.task_name == "bad" and caught.value.field == field
    assert isinstance(caught.value, duetime.DuetimeError)
    assert field in str(caught.value)
    assert not app.pollers.by_name and "duetime.poller.bad" not in app.types


def test_a_name_is_registered_once(app: duetime.App) -> None:
    def scheduler(ctx: duetime.PollContext) -> list[str]:
        return []

    app.poller("emails")(scheduler)
    with pytest.raises(duetime.DuplicateTaskNameError) as caught:
        app.poller("emails")(scheduler)
    assert caught.value.duplicate_task_name == "emails"

    @app.task("reports")
    async def report(payload: dict[str, Any]) -> None:
        pass

    with pytest.raises(duetime.DuplicateTaskNameError):
        app.poller("reports")(scheduler)
    poller = app.poller("sms")(scheduler)
    poller.handler(lambda instruction: None)
    with pytest.raises(duetime.DuplicateTaskNameError):
        app.task("sms")(report)
    with pytest.raises(duetime.ValidationError, match="has a handler already"):
        poller.handler(lambda instruction: None)
    with pytest.raises(duetime.InvalidTaskConfigurationError, match="name"):
        app.poller("n" + "x" * 60)
    with pytest.raises(duetime.InvalidTaskConfigurationError, match="scheduler"):
        app.poller("notcallable")(42)  # type: ignore[arg-type]


def _names(app: duetime.App) -> Callable[[], list[str]]:
    return lambda: sorted(n for n, t in app.types.items() if not t.declared)


async def test_a_worker_given_a_poller_name_runs_its_calls_and_its_handler(
    app: duetime.App,
) -> None:
    done: list[str] = []
    items = ["only"]

    @app.poller("named", delay=lambda attempt: QUICK)
    async def find(ctx: duetime.PollContext) -> list[str]:
        return [items.pop()] if items else []

    @find.handler
    async def work(instruction: str) -> None:
        done.append(instruction)

    @app.poller("bare", delay=lambda attempt: QUICK)
    async def bare(ctx: duetime.PollContext) -> list[str]:
        return []

    assert _names(app)() == ["duetime.poller.bare", "duetime.poller.named", "named"]
    async with running(app, types=["named", "bare"]) as worker:
        assert sorted(worker.running) == _names(app)()
        await eventually(lambda: done == ["only"])


async def test_a_pollers_task_found_dead_is_revived_when_a_worker_starts(
    app: duetime.App,
) -> None:
    calls: list[int] = []

    @app.poller("phoenix", delay=lambda attempt: QUICK)
    async def find(ctx: duetime.PollContext) -> list[str]:
        calls.append(ctx.attempt)
        return []

    store = await app.open()
    task_type, now = "duetime.poller.phoenix", app.clock.now_ms()
    await store.schedule(task_type, [find.first_tick(now)])
    batch = await store.claim(
        task_type, now_ms=now, limit=1, lease_ms=1000, max_stalls=0, at_most_once=False
    )
    (claim,) = batch.claims
    dead = Outcome("dead", claim, None, claim.record, "stalled too often")
    assert await store.settle(task_type, [dead], now) == [True]

    async with running(app):
        await eventually(lambda: len(calls) >= 2, what="calls again")
    got = await store.get(task_type, "phoenix")
    assert got is not None and got.state != "dead"
