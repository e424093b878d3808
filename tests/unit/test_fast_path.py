"""The worker's two paths give the same outcomes.

A claim is begun either by the fast path (``worker/hot.py``: a one-off task's first
attempt run by an ``async def`` handler) or by the general one (the executor's ``run``: a
Job, its trigger or ``run_once``). Here the same claims, with the same handlers, go through
both, on a clock the test holds still, and what each hands the outbox (the outcome with
the note the runner adds) must be the same, whatever the handler does: return at once or
after waiting, fail and be retried, fail for the last time, run past its time limit, be
aborted before it starts or while it waits, ask the type to wait (RateLimited), return a
result (kept with the run's note) or one too big to keep, or meet a record the fast path
does not take (a retry, a series, a unique task).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from datetime import timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import duetime
from duetime import Backoff, RateLimited
from duetime.clock import ManualClock
from duetime.events import Events
from duetime.record import Record
from duetime.stores.base import Claim, Outcome
from duetime.tasktype import TaskType
from duetime.triggers.periodic import Periodic
from duetime.worker.executor import Executor
from duetime.worker.hot import beginner
from duetime.worker.notes import note
from duetime.worker.run import Run

NOW = 1_800_000_000_000
BEHAVIOURS = (
    "returns",
    "result",
    "too_big",
    "waits",
    "waits_result",
    "fails",
    "fails_after_wait",
    "times_out",
    "limited",
    "aborts",
)


def _handler(behaviour: str, runs: list[Run]) -> Any:
    async def handler(payload: dict[str, Any]) -> object:
        if behaviour == "returns":
            return None
        if behaviour == "result":
            return {"n": payload["n"], "rows": [1, 2]}
        if behaviour == "too_big":
            return "x" * 70_000  # past a result's 64 KiB: the dead letters
        if behaviour == "fails":
            raise ValueError(f"bad {payload['n']}")
        if behaviour == "limited":
            raise RateLimited(30, "the API said so")
        await asyncio.sleep(0)  # it waits once: the fast path hands it on
        if behaviour == "fails_after_wait":
            raise ValueError(f"bad {payload['n']}")
        if behaviour == "times_out":
            await asyncio.Event().wait()  # never set: the time limit ends it
        if behaviour == "aborts":
            runs[-1].aborted = "aborted: App.abort() was called"
        if behaviour == "waits_result":
            return [payload["n"]]
        return None

    return handler


Types = dict[tuple[str, int], TaskType]


def _types(tmp: Path, runs: list[Run]) -> tuple[duetime.App, Types]:
    """A task type per behaviour and retry count, on an App the executor hands handlers."""
    app = duetime.App(f"sqlite:///{tmp / 'fast.db'}", clock=ManualClock(NOW))
    types = {}
    for behaviour in BEHAVIOURS:
        for retries in (0, 2):
            timeout = 0.01 if behaviour == "times_out" else None
            register = app.task(
                f"{behaviour}-{retries}",
                retries=retries,
                backoff=Backoff(
                    base=timedelta(seconds=5), cap=timedelta(minutes=1), factor=2, jitter=0
                ),
                timeout=timeout,
            )
            task_type = register(_handler(behaviour, runs))
            task_type.reschedule(lambda payload: payload["n"] % 2 == 0)
            types[behaviour, retries] = task_type
    return app, types


records = st.one_of(
    st.just("first"),  # {"p": ...}: the fast path's own
    st.sampled_from(("retried", "series", "unique", "occurrence")),
)


def _record(kind: str, n: int, due: int) -> str:
    payload = json.dumps({"n": n})
    if kind == "first":
        return Record(payload).encode()
    if kind == "retried":
        return Record(payload, failures=1, traceback="earlier").encode()
    if kind == "series":
        return Record(payload, trigger=Periodic(every_ms=60_000)).encode()
    if kind == "unique":
        return Record(payload, unique_ms=60_000).encode()
    return Record(payload, occurrence_ms=due - 1_000).encode()


def _executor(app: duetime.App, clock: ManualClock, noting: list[str]) -> Executor:
    return Executor(
        clock=clock, max_payload_bytes=1 << 20, pool=None, events=Events(), app=app, noting=noting
    )


async def _outcome(begin: Any, run: Run, clock: ManualClock, noted: bool) -> Outcome:
    """What the runner hands the outbox for ``run``: begun, awaited, and noted for a type
    that keeps a history (``Runner.finish``)."""
    result = begin(run)
    if not isinstance(result, Outcome):
        assert isinstance(result, Awaitable)
        result = await result
    return note(run, result, clock.now_ms()) if noted else result


def _comparable(outcome: Outcome) -> tuple[Any, ...]:
    """An outcome without the tracebacks' frames (the two paths call from different
    places; the exception and its message are the same)."""
    record = Record.decode(outcome.record) if outcome.record else None
    if record is not None and record.traceback is not None:
        record = Record(
            record.payload_json,
            record.trigger,
            record.occurrence_ms,
            record.failures,
            record.traceback.splitlines()[-1],
            record.unique_ms,
        )
    note_ = outcome.note
    if note_ is not None:
        note_ = note_._replace(trace=note_.trace.splitlines()[-1] if note_.trace else "")
    dead = Record.decode(outcome.dead_record).failures if outcome.dead_record else None
    return (*outcome._replace(record="", dead_record="", note=None), record, dead, note_)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    claims=st.lists(
        st.tuples(
            st.sampled_from(BEHAVIOURS),
            st.sampled_from((0, 2)),
            records,
            st.booleans(),  # aborted before it starts
            st.integers(0, 1_000),
        ),
        min_size=1,
        max_size=8,
    ),
    noted=st.booleans(),
)
def test_the_fast_and_the_general_path_settle_alike(
    tmp_path: Path, claims: list[tuple[str, int, str, bool, int]], noted: bool
) -> None:
    runs: list[Run] = []
    app, types = _types(tmp_path, runs)

    async def both() -> None:
        clock = ManualClock(NOW)
        names = [t.name for t in types.values()] if noted else []
        fast, general = (_executor(app, clock, names) for _ in range(2))
        general.eager = False  # begins every run the general way
        assert fast.eager
        for token, (behaviour, retries, kind, aborted, n) in enumerate(claims, 1):
            task_type = types[behaviour, retries]
            due = NOW - 5
            claim = Claim(f"task-{token}", token, 0, due, _record(kind, n, due))
            seen = []
            for executor in (fast, general):
                run = Run(claim, aborted="aborted: App.abort() was called" if aborted else None)
                runs.append(run)
                timeout = task_type.policy.timeout
                limit = None if timeout is None else timeout.total_seconds()
                begin = beginner(executor, task_type, limit)
                seen.append(_comparable(await _outcome(begin, run, clock, noted)))
            assert seen[0] == seen[1], (behaviour, retries, kind, aborted)

    asyncio.run(both())


def test_the_fast_path_is_taken_for_a_first_attempt(tmp_path: Path) -> None:
    """The property above compares two paths only if the fast one is really taken: a first
    attempt's outcome comes back from ``begin`` itself, not as something to await."""
    app, types = _types(tmp_path, [])
    task_type = types["returns", 0]
    executor = _executor(app, ManualClock(NOW), [])
    claim = Claim("a", 1, 0, NOW, Record('{"n": 1}').encode())

    async def begun() -> object:
        return beginner(executor, task_type, None)(Run(claim))

    assert isinstance(asyncio.run(begun()), Outcome)
