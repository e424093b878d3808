"""What a worker logs of its tasks, on a real SQLite store: each failed attempt a warning
with its time of retry in ISO 8601, the traceback on the last attempt (and on every one at
DEBUG), a line per finished task at DEBUG, a plain ``def`` handler that returns a
coroutine failed by name, and a failure of duetime's own code filed with its traceback."""

from __future__ import annotations

import gc
import logging
import re
import warnings
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import duetime
from duetime.worker import hot, job
from tests.helpers import eventually, has_state, is_gone, running

ISO_MS = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"
EXECUTOR = "duetime.worker.executor"


def _explode(attempt: int) -> None:
    raise ValueError(f"attempt {attempt} failed")


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[duetime.App]:
    app = duetime.App(f"sqlite:///{tmp_path / 'duetime.db'}")

    @app.task("crash", retries=1, backoff=duetime.Backoff(base=timedelta(milliseconds=10)))
    async def crash(payload: dict[str, Any], ctx: duetime.Context) -> None:
        _explode(ctx.attempt)

    @app.task("fine")
    async def fine(payload: dict[str, Any]) -> None:
        pass

    @app.task("told")
    async def told(payload: dict[str, Any], ctx: duetime.Context) -> None:
        pass

    yield app
    await app.close()


def executor_lines(caplog: pytest.LogCaptureFixture, level: int) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == EXECUTOR and r.levelno == level]


def formatted(record: logging.LogRecord) -> str:
    """The record as a log handler writes it, traceback included."""
    return logging.Formatter("%(levelname)s %(message)s").format(record)


async def test_each_failed_attempt_is_a_warning_and_the_last_carries_its_traceback(
    app: duetime.App, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "duetime")
    async with running(app):
        await app.schedule("crash", "c1")
        await eventually(lambda: has_state(app, "crash", "c1", "dead"))

    first, last = executor_lines(caplog, logging.WARNING)
    assert re.fullmatch(
        rf"crash/c1 attempt 1 failed \(ValueError: attempt 1 failed\); retry at {ISO_MS}",
        first.getMessage(),
    )
    assert first.exc_info is None  # a retried attempt: its traceback only at DEBUG
    assert last.getMessage() == (
        "crash/c1 attempt 2 failed (ValueError: attempt 2 failed); sent to the dead letters"
    )
    text = formatted(last)
    assert "Traceback (most recent call last):" in text and "in _explode\n" in text
    assert text.endswith("ValueError: attempt 2 failed")
    # No time in any line as epoch milliseconds.
    assert not [r.getMessage() for r in caplog.records if re.search(r"\b1\d{12}\b", r.getMessage())]
    assert executor_lines(caplog, logging.DEBUG) == []


async def test_at_debug_every_attempt_has_its_traceback_and_each_run_a_line(
    app: duetime.App, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, "duetime")
    async with running(app):
        await app.schedule("fine", "f1")
        await app.schedule("crash", "c1")
        await eventually(lambda: has_state(app, "crash", "c1", "dead"))
        await eventually(lambda: is_gone(app, "fine", "f1"))

    retried, dead = executor_lines(caplog, logging.WARNING)
    assert retried.exc_info is not None and "ValueError: attempt 1 failed" in formatted(retried)
    assert dead.exc_info is not None
    runs = sorted(r.getMessage() for r in executor_lines(caplog, logging.DEBUG))
    assert len(runs) == 3, runs
    assert re.fullmatch(rf"crash/c1 attempt 1: retry at {ISO_MS} in \d+\.\d ms", runs[0])
    assert re.fullmatch(r"crash/c1 attempt 2: dead in \d+\.\d ms", runs[1])
    assert re.fullmatch(r"fine/f1 attempt 1: done in \d+\.\d ms", runs[2])


async def test_a_plain_def_handler_that_returns_a_coroutine_fails_naming_it(
    app: duetime.App,
) -> None:
    async def send(payload: dict[str, Any]) -> None:
        pass

    @app.task("forgot", retries=0)
    def forgot_async(payload: dict[str, Any]) -> object:  # should have been `async def`
        return send(payload)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with running(app):
            await app.schedule("forgot", "f1")
            await eventually(lambda: has_state(app, "forgot", "f1", "dead"))
        gc.collect()  # a coroutine left unclosed would warn as it is collected

    info = await app.get("forgot", "f1")
    assert info is not None and info.error is not None
    assert info.error.startswith(
        "TypeError: handler test_a_plain_def_handler_that_returns_a_coroutine_fails_naming_it."
        "<locals>.forgot_async returned a coroutine: declare it `async def`"
    )
    assert not [w for w in caught if "never awaited" in str(w.message)], caught


async def test_a_failure_of_duetimes_own_code_keeps_its_traceback_in_the_dead_letter(
    app: duetime.App, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_context(*args: object) -> object:  # a bug in duetime, not in a handler
        raise RuntimeError("duetime bug")

    # Every run of a handler that takes a Context, on the hot path or through a trigger,
    # builds that context here.
    monkeypatch.setattr(hot, "handler_context", broken_context)
    monkeypatch.setattr(job, "handler_context", broken_context)
    async with running(app):
        await app.schedule("told", "f1", payload={"k": 1})
        await eventually(lambda: has_state(app, "told", "f1", "dead"))

    info = await app.get("told", "f1")
    assert info is not None and info.error == "internal error: RuntimeError: duetime bug"
    assert info.payload == {"k": 1}  # the record as it was, with the traceback added
    trace = info.traceback
    assert trace is not None and "in broken_context\n" in trace
    assert "hot.py" in trace  # duetime's own frames are the point here: all are kept
    assert trace.endswith("RuntimeError: duetime bug\n")
    (line,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert line.getMessage() == "told/f1: duetime failed while running it; sent to the dead letters"
