"""The options of a cron schedule (:mod:`.manage` names them too), small enough to import
with the App."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from duetime.triggers.cron.policy import Missed, Overlap


class CronOptions(TypedDict, total=False):
    """The options of a cron schedule, as ``@app.cron`` and ``app.add_cron`` take them.

    Attributes:
        tz: the IANA time zone the expression is read in (default ``"UTC"``).
        payload: given to each run.
        missed: what to do with ticks missed while every worker was down: ``skip`` them
            (the default), run ``once`` for all of them, or run ``all`` of them (at most
            100). A tick is missed when it starts more than a minute late (or after the
            next tick, if that comes sooner).
        overlap: what a tick that comes due while the previous run is still running does:
            ``skip`` (the default: it is skipped and counted), ``allow`` (it runs at once,
            alongside: each tick is then a task of its own), ``buffer_one`` (it waits and
            runs when the run ends; further ticks meanwhile are skipped), ``buffer_all``
            (every one waits and runs in order, at most 100; the rest are skipped) or
            ``cancel_other`` (the running handler is aborted, as ``App.abort`` does, and the
            new tick runs once it has ended).
        jitter: delay each tick by up to this much, at random (shorter than the period).
        catchup: missed ticks older than this are not caught up.
        start: no tick before this time (an aware datetime).
        end: no tick after this time; the schedule is then finished (it stays listed).
        limit: the schedule is finished after this many runs (done or dead).
        immediately: run once when the schedule is first written to the store (not on
            every worker start, nor when it is declared again), then on its ticks.
        grace: how late a tick may start and still run (default a minute, or less when
            the next tick comes sooner); a later one is missed.
    """

    tz: str
    payload: dict[str, Any] | None
    missed: Missed
    overlap: Overlap
    jitter: timedelta | float | None
    catchup: timedelta | float | None
    start: datetime | None
    end: datetime | None
    limit: int | None
    immediately: bool
    grace: timedelta | float | None


#: The names of the cron options, to tell them from a task type's in ``@app.cron``.
CRON_OPTIONS = frozenset(CronOptions.__annotations__)
