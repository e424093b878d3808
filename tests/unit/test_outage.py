"""How a loop logs failures of its store: one warning when they begin, one per interval while
they go on (saying how many were not shown), one line when the store answers again."""

from __future__ import annotations

import logging

import pytest

from duetime._outage import OutageLog
from duetime.errors import StoreUnavailable

log = logging.getLogger("duetime.test_outage")


class Seconds:
    """A monotonic clock that moves when told."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == log.name]


def test_an_outage_logs_a_warning_a_summary_per_interval_and_one_line_when_it_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, log.name)
    clock = Seconds()
    outage = OutageLog("claims of mail", log, interval=10.0, clock=clock)
    outage.ok()  # nothing failed: nothing to say
    down = StoreUnavailable("Redis unavailable during claim: refused")
    for _ in range(50):  # one failure every 0.5 s for 25 s
        outage.failed(down, "claiming failed (%s); trying again", down)
        clock.now += 0.5
    assert outage.failing
    outage.ok()
    outage.ok()
    assert not outage.failing
    assert lines(caplog) == [
        (
            "WARNING",
            "claims of mail: claiming failed (Redis unavailable during claim: refused); "
            "trying again",
        ),
        (
            "WARNING",
            "claims of mail: claiming failed (Redis unavailable during claim: refused); "
            "trying again (failing for 10.0 s; 19 more failures in the last 10.0 s not shown)",
        ),
        (
            "WARNING",
            "claims of mail: claiming failed (Redis unavailable during claim: refused); "
            "trying again (failing for 20.0 s; 19 more failures in the last 10.0 s not shown)",
        ),
        ("INFO", "claims of mail: store reachable again after 25.0 s"),
    ]

    # The next outage begins with a warning of its own.
    caplog.clear()
    outage.failed(down, "claiming failed (%s); trying again", down)
    assert [level for level, _ in lines(caplog)] == ["WARNING"]


def test_a_failure_that_is_no_store_error_is_logged_as_a_bug_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, log.name)
    outage = OutageLog("settles", log, clock=Seconds())
    try:
        raise KeyError("oops")
    except KeyError as exc:
        outage.failed(exc, "settling failed (%r)", exc)
    (record,) = caplog.records
    assert record.levelname == "ERROR" and record.exc_info is not None
    assert record.getMessage() == "settles: settling failed (KeyError('oops'))"
    # A driver's error that a store's own loop expects is a warning, without a trace.
    caplog.clear()
    other = OutageLog("wake-up channel", log, clock=Seconds())
    other.failed(ConnectionError("reset"), "connection lost (%s)", "reset", expected=True)
    (record,) = caplog.records
    assert record.levelname == "WARNING" and record.exc_info is None
