"""What :meth:`~duetime.testing.Harness.run_due` reports: a :class:`Run` per handler's run,
as a listener of the worker's events heard it."""

from __future__ import annotations

import traceback as tb
from dataclasses import dataclass
from typing import Literal

from duetime.events import Listener, WorkerEvent

RunOutcome = Literal["done", "retry", "dead", "aborted"]


@dataclass(frozen=True, slots=True)
class Run:
    """One run of a task in :meth:`~duetime.testing.Harness.run_due`.

    Attributes:
        task_type: the task type (a cron schedule's or an expiring group's;
            ``duetime.poller.<name>`` for a poller's call).
        task_id: the task's id: a cron schedule's name, ``<key>@<expiry ms>`` for an
            expiry, a poller's name for its call.
        attempt: which attempt at its occurrence this was (1 for the first).
        outcome: ``done``: the handler returned (a periodic task's occurrence and a cron
            tick too); ``retry``: it raised and runs again once its back-off has passed;
            ``dead``: it raised and went to the dead letters (out of retries, or aborted;
            for a series, the occurrence), or the task's stored data could not be read;
            ``aborted``: the run was aborted (``App.abort``, or a cron schedule's
            ``overlap="cancel_other"``), and is not retried.
        error: what the handler raised, as a dead letter shows it (``ValueError: boom``);
            None when done.
        traceback: the exception's formatted traceback; None when done, or when no
            handler ran.
    """

    task_type: str
    task_id: str
    attempt: int
    outcome: RunOutcome
    error: str | None = None
    traceback: str | None = None


@dataclass(slots=True)
class _Heard:
    """A claimed task, as its events arrive."""

    task_type: str
    task_id: str
    attempt: int = 1
    outcome: RunOutcome | None = None
    error: str | None = None
    traceback: str | None = None


class RunRecorder(Listener):
    """A worker's listener that keeps one :class:`Run` per claimed task whose handler ran
    or that went to the dead letters, in the order they were claimed. A claim that only
    handed its occurrence on (a cron tick, an entry at its expiry) is no run: the task it
    handed on is."""

    def __init__(self) -> None:
        self._heard: list[_Heard] = []
        self._running: dict[tuple[str, str], _Heard] = {}

    def _of(self, event: WorkerEvent) -> _Heard:
        key = (event.task_type, event.task_id)
        heard = self._running.get(key)
        if heard is None:  # an event without a claim: none in a worker, but never lost
            heard = self._running[key] = _Heard(event.task_type, event.task_id)
            self._heard.append(heard)
        return heard

    def claimed(self, event: WorkerEvent) -> None:
        heard = _Heard(event.task_type, event.task_id)
        self._heard.append(heard)
        self._running[(event.task_type, event.task_id)] = heard

    def started(self, event: WorkerEvent) -> None:
        self._of(event).attempt = event.attempt or 1

    def succeeded(self, event: WorkerEvent) -> None:
        self._of(event).outcome = "done"

    def failed(self, event: WorkerEvent) -> None:
        heard = self._of(event)
        heard.error = event.error
        if event.exception is not None:
            heard.traceback = "".join(tb.format_exception(event.exception))

    def retried(self, event: WorkerEvent) -> None:
        self._ended(event, "retry")

    def dead_lettered(self, event: WorkerEvent) -> None:
        self._ended(event, "dead")

    def aborted(self, event: WorkerEvent) -> None:
        self._ended(event, "aborted")

    def _ended(self, event: WorkerEvent, outcome: RunOutcome) -> None:
        heard = self._of(event)
        heard.outcome = outcome
        heard.error = heard.error or event.error

    def runs(self) -> list[Run]:
        """The runs heard so far, in the order their tasks were claimed."""
        return [
            Run(h.task_type, h.task_id, h.attempt, h.outcome, h.error, h.traceback)
            for h in self._heard
            if h.outcome is not None
        ]
