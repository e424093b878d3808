"""What pollers tell the application: Planton's ``task`` and ``error`` events.

``app.events.on("task", fn)`` hears each instruction a poller dispatches, and
``app.events.on("error", fn)`` each failure of a poller (its scheduler raised, returned
something other than a list of strings, or its delay, limit or active instructions could not
be read). Listeners may be plain functions or coroutine functions; they run in the worker's
event loop, in order, and one that raises is logged and never stops polling.

``app.events`` is a :class:`~duetime.events.Listener` of the workers of the app: the
poller's task tells the worker's listeners what a call did (``dispatched`` and
``poll_failed`` events), and this one passes them on as Planton's ``task`` and ``error``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, get_args, overload

from duetime.errors import ValidationError
from duetime.events import Listener, WorkerEvent
from duetime.triggers.poll import TICK_PREFIX

if TYPE_CHECKING:
    from duetime.clock import Clock
    from duetime.stores.base import Store

log = logging.getLogger("duetime.pollers")

EventName = Literal["task", "error"]
EVENT_NAMES: tuple[EventName, ...] = get_args(EventName)


@dataclass(frozen=True, slots=True)
class TaskEvent:
    """A poller dispatched an instruction (Planton's ``task`` event).

    Attributes:
        task_name: the poller.
        instruction: what its scheduler returned; with a handler, the id of the task that
            runs it.
    """

    task_name: str
    instruction: str


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """A poller's call failed (Planton's ``error`` event); it is called again after its
    delay.

    Attributes:
        task_name: the poller.
        error: what went wrong: what the scheduler raised, an
            :class:`~duetime.UnexpectedTaskInstructionsError`, or another failure.
    """

    task_name: str
    error: BaseException


PollerEvent: TypeAlias = TaskEvent | ErrorEvent
TaskListener: TypeAlias = Callable[[TaskEvent], "Awaitable[None] | None"]
ErrorListener: TypeAlias = Callable[[ErrorEvent], "Awaitable[None] | None"]
EventListener: TypeAlias = Callable[[Any], "Awaitable[None] | None"]


class PollerEvents(Listener):
    """The listeners of an app's pollers' events: ``app.events``."""

    def __init__(self) -> None:
        self._listeners: dict[EventName, list[EventListener]] = {n: [] for n in EVENT_NAMES}
        #: The async listeners' calls still running, awaited one after another (in order).
        self._tail: asyncio.Task[None] | None = None

    @overload
    def on(self, name: Literal["task"], listener: TaskListener) -> TaskListener: ...

    @overload
    def on(self, name: Literal["error"], listener: ErrorListener) -> ErrorListener: ...

    def on(self, name: EventName, listener: EventListener) -> EventListener:
        """Call ``listener`` with each event ``name`` ("task" or "error"); returns it, so
        this works as a decorator too.

        Raises:
            ValidationError: an unknown event name, or a listener that is not callable.
        """
        self._known(name)
        if not callable(listener):
            raise ValidationError("listener", f"the listener of {name!r} events must be callable")
        self._listeners[name].append(listener)
        return listener

    @overload
    def off(self, name: Literal["task"], listener: TaskListener) -> None: ...

    @overload
    def off(self, name: Literal["error"], listener: ErrorListener) -> None: ...

    def off(self, name: EventName, listener: EventListener) -> None:
        """Stop calling ``listener`` with events ``name``; no-op if it was not listening."""
        self._known(name)
        listeners = self._listeners[name]
        if listener in listeners:
            listeners.remove(listener)

    def wants(self, name: EventName) -> bool:
        """Whether any listener hears events ``name``."""
        return bool(self._listeners[name])

    async def emit(self, name: EventName, event: PollerEvent) -> None:
        """Call every listener of ``name`` with ``event``, awaiting the async ones; a
        listener that raises is logged."""
        for listener in tuple(self._listeners[name]):
            try:
                answer = listener(event)
                if inspect.isawaitable(answer):
                    await answer
            except Exception:
                log.exception("%s: a listener of %s events failed", event.task_name, name)

    # -- as a worker's listener ------------------------------------------------------------

    def dispatched(self, event: WorkerEvent) -> None:
        if self._listeners["task"] and event.instruction is not None:
            self._tell("task", TaskEvent(_poller(event), event.instruction))

    def poll_failed(self, event: WorkerEvent) -> None:
        if self._listeners["error"] and event.exception is not None:
            self._tell("error", ErrorEvent(_poller(event), event.exception))

    def _tell(self, name: EventName, event: PollerEvent) -> None:
        """Call the listeners of ``name`` in order: a plain function at once, a coroutine
        function's call after the async calls before it, in a task of its own (a worker's
        listener must not wait)."""
        for listener in tuple(self._listeners[name]):
            try:
                answer = listener(event)
            except Exception:
                log.exception("%s: a listener of %s events failed", event.task_name, name)
                continue
            if inspect.isawaitable(answer):
                previous = self._tail
                self._tail = asyncio.get_running_loop().create_task(
                    _after(previous, answer, event.task_name, name)
                )

    async def finish(self, store: Store, clock: Clock) -> None:
        """Wait for the async listeners' calls still running."""
        tail = self._tail
        if tail is not None:
            await asyncio.shield(tail)

    @staticmethod
    def _known(name: str) -> None:
        if name not in EVENT_NAMES:
            raise ValidationError("name", f"unknown poller event {name!r}: expected task or error")


def _poller(event: WorkerEvent) -> str:
    """The poller an event of its task (type ``duetime.poller.<name>``) is about."""
    return event.task_id if event.task_type.startswith(TICK_PREFIX) else event.task_type


async def _after(
    previous: asyncio.Task[None] | None, call: Awaitable[object], poller: str, name: str
) -> None:
    if previous is not None:
        await asyncio.wait([previous])
    try:
        await call
    except Exception:
        log.exception("%s: a listener of %s events failed", poller, name)
