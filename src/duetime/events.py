"""What happens in a worker, told to listeners: the one seam for metrics, dashboards, the
features' own bookkeeping and ``app.events``.

A worker calls its listeners' methods in its event loop, as things happen: a claim, a
handler's start and end, a retry, a dead letter, a missed cron tick, an instruction a poller
dispatched or a poller's failed call. Every method of :class:`Listener` does nothing, so a
listener overrides only what it needs. A listener must return quickly and never block; one
that raises is logged and the worker goes on. A listener may also take part in the worker's
life: start with it (:meth:`Listener.start`), run loops of its own while it runs, and finish
after its last outcome is written.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args

if TYPE_CHECKING:
    from duetime.clock import Clock
    from duetime.stores.base import Claim, Outcome, Store

log = logging.getLogger(__name__)

EventKind = Literal[
    "claimed",
    "started",
    "succeeded",
    "failed",
    "retried",
    "dead_lettered",
    "aborted",
    "missed_ticks",
    "settled",
    "dispatched",
    "poll_failed",
]
EVENT_KINDS: tuple[EventKind, ...] = get_args(EventKind)


@dataclass(slots=True)
class WorkerEvent:
    """One thing that happened to a task in a worker; read it, do not change it (every
    listener gets the same one). Not frozen: a worker makes one or more per task, and a
    frozen dataclass costs five times as much to build (about 1 µs against 0.2).

    Attributes:
        kind: which method of :class:`Listener` it was given to.
        task_type, task_id: the task (for a cron schedule, its name).
        due_ms: when the task was due as it was claimed (epoch ms); for missed ticks, the
            latest tick given up.
        attempt: which attempt at its occurrence this is (1 for the first); None where the
            worker does not know it yet (claimed) or it does not apply (missed_ticks).
        lateness_ms: how long after its due time it was claimed or started.
        duration_ms: how long the handler ran (succeeded and failed).
        error: what the handler raised (failed, retried, dead_lettered), or why the run
            was aborted (aborted).
        count: how many ticks were missed (missed_ticks); 1 otherwise.
        instruction: what a poller dispatched (dispatched).
        exception: what the handler raised (failed: with its traceback), or what made a
            poller's call fail (poll_failed).
    """

    kind: EventKind
    task_type: str
    task_id: str
    due_ms: int
    attempt: int | None = None
    lateness_ms: float | None = None
    duration_ms: float | None = None
    error: str | None = None
    count: int = 1
    instruction: str | None = None
    exception: BaseException | None = None


class Finished(Protocol):
    """A run whose outcome the store kept, as :meth:`Listener.finished` is told of it.

    Attributes:
        claim: the claim it ran under (the task's id, due time, token, record).
        outcome: what followed it (its ``op``: done, next, retry or dead; ``error``).
        fired_ms: when its handler started, by the store's clock; 0.0 when no handler ran
            (a cron tick handed off, or missed).
    """

    @property
    def claim(self) -> Claim: ...

    @property
    def outcome(self) -> Outcome | None: ...

    @property
    def fired_ms(self) -> float: ...


class Listener:
    """Receives a worker's events; subclass it and override the methods you need."""

    def claimed(self, event: WorkerEvent) -> None:
        """A task was leased to this worker (``lateness_ms``: claimed how long after due)."""

    def started(self, event: WorkerEvent) -> None:
        """A handler started (``lateness_ms``: how long after the task was due)."""

    def succeeded(self, event: WorkerEvent) -> None:
        """A handler returned (``duration_ms``)."""

    def failed(self, event: WorkerEvent) -> None:
        """A handler raised or timed out (``duration_ms``, ``error``); ``retried`` or
        ``dead_lettered`` follows."""

    def retried(self, event: WorkerEvent) -> None:
        """A failed attempt will be tried again (``due_ms`` is when)."""

    def dead_lettered(self, event: WorkerEvent) -> None:
        """A failed occurrence went to the dead letters: out of retries, or aborted."""

    def aborted(self, event: WorkerEvent) -> None:
        """A run was aborted (``App.abort``, or a cron schedule's
        ``overlap="cancel_other"``; ``error`` says which): a ``failed`` event came first
        if its handler had started. It is not retried: a one-off task ends, a series goes
        on with its next occurrence."""

    def missed_ticks(self, event: WorkerEvent) -> None:
        """A cron schedule gave up ``count`` ticks missed while no worker ran it."""

    def settled(self, event: WorkerEvent) -> None:
        """The store holds the outcome of a run (done, next, retry or dead letter): the
        task no longer runs here. Called after the event of the outcome itself."""

    def finished(self, task_type: str, runs: Sequence[Finished]) -> None:
        """Runs of ``task_type`` whose outcomes the store kept, once per settle batch: the
        cheap way to count every task (no event is built per task for it, and the worker
        notes when each handler started only when a listener has this method)."""

    def dispatched(self, event: WorkerEvent) -> None:
        """A poller's call dispatched ``instruction`` (``task_type``: the type of the
        poller's calls, ``task_id``: the poller's name)."""

    def poll_failed(self, event: WorkerEvent) -> None:
        """A poller's call failed, or part of it (``exception``, ``error``); the poller goes
        on after its delay."""

    async def start(self, store: Store, clock: Clock) -> None:
        """Called as the worker starts, before it claims anything, in the order the
        listeners were given; an exception stops the worker (a port in use, say)."""

    def loops(self, store: Store, clock: Clock) -> list[Coroutine[Any, Any, None]]:
        """Work of the listener's own while the worker runs, each cancelled when it stops
        (a heartbeat, a flush of what was counted)."""
        return []

    async def wait_idle(self) -> None:
        """Return once the work the listener began on the events so far is done (a poller's
        next call brought forward as its instruction ended): a worker in a burst waits for
        it before it decides that nothing more is due. An exception is logged."""

    async def finish(self, store: Store, clock: Clock) -> None:
        """Called once the worker stopped claiming, its handlers ended and their outcomes
        are written; an exception is logged."""

    async def close(self) -> None:
        """Called last, however the worker ended (also after a failed start), to release
        what :meth:`start` took."""


class Events:
    """The listeners of one worker, told of each event in turn."""

    def __init__(self, listeners: Iterable[Listener] = ()) -> None:
        self.listeners = tuple(listeners)
        for listener in self.listeners:
            if not isinstance(listener, Listener):
                raise TypeError(f"{listener!r} is not a duetime.Listener")
        self._methods: dict[EventKind, tuple[Callable[[WorkerEvent], None], ...]] = {
            kind: tuple(
                getattr(listener, kind)
                for listener in self.listeners
                # Only the methods a listener overrides: the rest would do nothing.
                if getattr(type(listener), kind) is not getattr(Listener, kind)
            )
            for kind in EVENT_KINDS
        }
        self._finished = tuple(
            listener.finished
            for listener in self.listeners
            if type(listener).finished is not Listener.finished
        )

    def wants(self, kind: EventKind | Literal["finished"]) -> bool:
        """Whether any listener handles ``kind`` (so that no event is built for nobody)."""
        if kind == "finished":
            return bool(self._finished)
        return bool(self._methods[kind])

    def finished(self, task_type: str, runs: Sequence[Finished]) -> None:
        """Tell the listeners of finished runs of ``task_type``."""
        for method in self._finished:
            try:
                method(task_type, runs)
            except Exception:
                log.exception("listener %r failed on finished runs", method)

    def emit(self, event: WorkerEvent) -> None:
        for method in self._methods[event.kind]:
            try:
                method(event)
            except Exception:
                log.exception("listener %r failed on a %s event", method, event.kind)
