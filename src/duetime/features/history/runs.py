"""Runs as the history shows them (:class:`RunInfo`), read from the store."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from duetime.clock import from_ms, in_range
from duetime.stores.base import Store
from duetime.stores.capabilities import RUN_HISTORY, use
from duetime.stores.runs import StoredRun
from duetime.validate import occurrence_id


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One finished run of a task, as :meth:`App.history` shows it.

    Attributes:
        occurrence: the occurrence it ran (a one-off task's due time, a series' occurrence,
            a cron tick); None when the store holds a time that cannot be read.
        occurrence_id: ``"<task id>@<occurrence ms>"``, as the handler's
            ``ctx.occurrence`` said it.
        attempt: which attempt at the occurrence it was (1 for the first).
        started: when its handler started; None when no handler did (a record that could
            not be read) or that is unknown (a run whose worker died: see ``error``).
        finished: when the run ended (for a run whose worker died, when its lease was
            found expired).
        duration: ``finished - started``, or None.
        outcome: ``done``; ``failed``, an attempt that is tried again; ``dead``, the
            occurrence was given up (see the dead letters); ``aborted``, cut short on
            purpose.
        error: why it failed, or why it ended (``lease expired ...``: its worker died).
        traceback: the traceback of its failure, its last frames and at most 8 KB.
        worker: the id of the worker that ran it (None when unknown: its worker died).
        result: what its handler returned (a done run's, when it returned something: see
            :meth:`App.result`); None otherwise.
    """

    task_type: str
    task_id: str
    occurrence: datetime | None
    occurrence_id: str
    attempt: int
    started: datetime | None
    finished: datetime | None
    duration: timedelta | None
    outcome: str
    error: str | None
    traceback: str | None
    worker: str | None
    result: Any = None


def run_info(task_type: str, run: StoredRun) -> RunInfo:
    """A stored run as the history shows it."""
    started, finished = _moment(run.started_ms), _moment(run.finished_ms)
    duration = None
    if run.started_ms is not None and started is not None and finished is not None:
        duration = timedelta(milliseconds=max(0, run.finished_ms - run.started_ms))
    return RunInfo(
        task_type,
        run.task_id,
        _moment(run.occurrence_ms),
        occurrence_id(run.task_id, run.occurrence_ms),
        run.attempt,
        started,
        finished,
        duration,
        run.outcome,
        run.error,
        run.trace,
        run.worker,
        None if run.result is None else json.loads(run.result),
    )


async def read_runs(
    store: Store,
    task_type: str,
    task_id: str | None,
    limit: int,
    since_ms: int | None = None,
) -> list[RunInfo]:
    """The newest runs of ``task_type`` (of ``task_id`` if given) in ``store``."""
    found = await use(store, RUN_HISTORY).runs(
        task_type, task_id=task_id, limit=limit, since_ms=since_ms
    )
    return [run_info(task_type, run) for run in found]


def _moment(ms: int | None) -> datetime | None:
    return None if ms is None or not in_range(ms) else from_ms(ms)
