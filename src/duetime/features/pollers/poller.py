"""A poller: a scheduler called at intervals that returns instructions, and their handler.

``@app.poller(name, ...)`` returns one. Each call (:meth:`Poller.poll`, run by the worker
that holds the poller's task, see :mod:`duetime.triggers.poll`) checks that it still holds
the call's lease and fences off earlier calls (:mod:`.lease`), reads the active
instructions, works out the limit, calls the scheduler unless the limit is 0 or less, checks
what it returned, turns each instruction into a task of the handler's type (its id is the
instruction, so one never runs twice at once; the write is refused once a later call
began), and says when the next call comes, with what it dispatched and what went wrong:
the poller's task tells the worker's listeners (``app.events`` among them).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar, overload

from duetime.clock import epoch_ms
from duetime.context import Context
from duetime.errors import (
    DuetimeError,
    InvalidTaskConfigurationError,
    LeaseLost,
    UnexpectedTaskInstructionsError,
    ValidationError,
)
from duetime.features.pollers.defaults import default_delay as default_delay
from duetime.features.pollers.defaults import default_limit as default_limit
from duetime.features.pollers.dispatch import dispatch
from duetime.features.pollers.lease import CallLease
from duetime.record import Record
from duetime.stores.base import NewTask, Store
from duetime.tasktype import Handler, TaskType
from duetime.triggers.poll import (
    POLL_TICK,
    TICK_PREFIX,
    Step,
    read_attempt,
    tick_payload,
)

log = logging.getLogger("duetime.pollers")

#: The longest task type name (see :func:`duetime.validate.check_name`).
MAX_NAME = 64
#: The longest wait between two calls a delay may ask for: a day.
MAX_DELAY_MS = 86_400_000
#: The most active instruction ids read for one call; a poller's concurrency is at most this.
MAX_ACTIVE = 10_000
#: The shortest lease of a poller's call (as of any task type's claim).
MIN_LEASE_MS = 100

Scheduler = Callable[["PollContext"], Any]
H = TypeVar("H", bound=Handler)
Delay = Callable[[int], Any]
Limit = Callable[[int, list[str]], Any]
Active = Callable[[str], Any]


@dataclass(frozen=True, slots=True)
class PollContext:
    """What a poller's scheduler is called with.

    Attributes:
        task_name: the poller's name.
        concurrency: the most instructions active at once, across every worker.
        limit: how many instructions to return at most (over 0).
        active_instructions: the instructions active now: by default, the pending and
            running tasks of the handler's type, across every worker.
        attempt: the calls in a row that produced nothing (0 after one that did).
    """

    task_name: str
    concurrency: int
    limit: int
    active_instructions: list[str]
    attempt: int


@dataclass(frozen=True, slots=True)
class PollerSettings:
    """A poller's settings (see :meth:`~duetime.App.poller`); :meth:`check` them."""

    concurrency: int
    delay: Delay
    calculate_limit: Limit
    active: Active | None
    timeout: float | None
    lease_ms: int

    def check(self, name: str) -> None:
        """Raise InvalidTaskConfigurationError naming a setting that cannot be used."""
        if len(TICK_PREFIX) + len(name) > MAX_NAME:
            problem = f"a poller's name has at most {MAX_NAME - len(TICK_PREFIX)} characters"
            raise InvalidTaskConfigurationError(name, "name", problem)
        concurrency: Any = self.concurrency
        if type(concurrency) is not int or not 1 <= concurrency <= MAX_ACTIVE:
            problem = f"must be an integer from 1 to {MAX_ACTIVE}, not {concurrency!r}"
            raise InvalidTaskConfigurationError(name, "concurrency", problem)
        for setting in ("delay", "calculate_limit"):
            if not callable(getattr(self, setting)):
                raise InvalidTaskConfigurationError(name, setting, "must be callable")
        if self.active is not None and not callable(self.active):
            raise InvalidTaskConfigurationError(name, "active", "must be callable or None")
        if self.lease_ms < MIN_LEASE_MS:
            problem = f"must be at least {MIN_LEASE_MS} ms"
            raise InvalidTaskConfigurationError(name, "lease", problem)


async def _answer(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class Poller:
    """A registered poller: its scheduler, settings and (optional) handler.

    Calling it calls the scheduler. ``@poller.handler`` (or ``@poller.handler(retries=...)``)
    sets the function each instruction runs as a task of type ``name``.
    """

    def __init__(
        self,
        name: str,
        scheduler: Scheduler,
        settings: PollerSettings,
        *,
        add_handler: Callable[[str, Handler, dict[str, Any]], TaskType],
        open_store: Callable[[], Awaitable[Store]],
        now_ms: Callable[[], Awaitable[int]],
    ) -> None:
        if not callable(scheduler):
            raise InvalidTaskConfigurationError(name, "scheduler", "must be callable")
        self.name = name
        self.scheduler = scheduler
        self.settings = settings
        self.handler_type: TaskType | None = None
        self._add_handler = add_handler
        self._open = open_store
        self._now_ms = now_ms
        #: Calls of this poller running in this process, and whether an instruction ended
        #: (in this process) while one ran: the next call then comes at once.
        self.calls_running = 0
        self.freed = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.scheduler(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Poller {self.name!r} concurrency={self.concurrency}>"

    @property
    def concurrency(self) -> int:
        """The most instructions active at once, across every worker."""
        return self.settings.concurrency

    @overload
    def handler(self, fn: H, /) -> H: ...

    @overload
    def handler(self, fn: None = None, /, **options: Any) -> Callable[[H], H]: ...

    def handler(self, fn: Handler | None = None, /, **options: Any) -> Any:
        """Decorate the function each instruction runs: ``(instruction)`` or
        ``(instruction, ctx)``, async or a plain ``def``, as a task of type ``name`` whose
        id is the instruction. ``options`` are :meth:`~duetime.App.task`'s (retries,
        timeout, lease, ...).

        Raises:
            ValidationError: a bad option, a handler that takes other arguments, or a
                poller that has one.
        """

        def register(fn: H) -> H:
            if self.handler_type is not None:
                raise ValidationError("handler", f"poller {self.name!r} has a handler already")
            self.handler_type = self._add_handler(self.name, fn, options)
            return fn

        return register if fn is None else register(fn)

    # -- one call ---------------------------------------------------------------------

    async def poll(self, payload: dict[str, Any], ctx: Context) -> Step:
        """One call, made by the worker that holds the poller's task (``ctx`` is its claim):
        returns the attempt count from now on, the wait before the next call, and what the
        call dispatched and what went wrong. Never raises: a failure is reported, and the
        next call comes after the delay."""
        attempt = read_attempt(payload)
        lease_ms, due_ms = self.settings.lease_ms, epoch_ms(ctx.due)
        lease = CallLease(
            self._open, ctx.task_type, ctx.task_id, ctx.token, lease_ms, self._now_ms, due_ms
        )
        report = _Report()
        self.calls_running += 1
        self.freed = False
        try:
            began = await self._begin(lease, report)
            produced = await self._call(attempt, lease, report) if began else None
        finally:
            self.calls_running -= 1
        if produced is not None:  # None: not called, every slot is taken
            attempt = 0 if produced else attempt + 1
        delay_ms = 0 if self.freed else await self._delay_ms(attempt, report)
        log.debug("%s: next call in %d ms (attempt %d)", self.name, delay_ms, attempt)
        return Step(attempt, delay_ms, tuple(report.dispatched), tuple(report.errors))

    async def _begin(self, lease: CallLease, report: _Report) -> bool:
        """Whether the call may be made: its lease holds, and the handler type's fence is
        raised to its token. A worker that was paused past its lease (its call taken over
        meanwhile) does not call the scheduler on it."""
        try:
            await lease.begin(None if self.handler_type is None else self.name)
        except LeaseLost as exc:
            self._failed(report, exc, "not called: the call's lease was lost")
            return False
        except Exception as exc:
            self._failed(report, exc, "not called: the call's lease could not be checked")
            return False
        return True

    async def _call(self, attempt: int, lease: CallLease, report: _Report) -> bool | None:
        """Call the scheduler and dispatch what it returns: whether it returned
        instructions, or None when it was not called (the limit is 0 or less)."""
        name, settings = self.name, self.settings
        try:
            active = await self._active()
            limit = await _answer(settings.calculate_limit(settings.concurrency, list(active)))
            if type(limit) is not int:
                raise ValidationError("calculate_limit", f"returned {limit!r}: expected an int")
        except Exception as exc:
            self._failed(report, exc, "could not work out the limit")
            return False
        if limit <= 0:
            log.debug("%s: not called: limit %d (%d active)", name, limit, len(active))
            return None
        ctx = PollContext(name, settings.concurrency, limit, active, attempt)
        try:
            instructions = await self._schedule(ctx)
        except Exception as exc:
            self._failed(report, exc, "the scheduler failed")
            return False
        if not instructions:
            return False
        log.debug("%s: %d instructions (limit %d)", name, len(instructions), limit)
        if len(instructions) > limit:
            log.warning(
                "%s: the scheduler returned %d instructions for a limit of %d; all are run",
                name,
                len(instructions),
                limit,
            )
        await self._dispatch(instructions, lease, report)
        return True

    async def _active(self) -> list[str]:
        active = self.settings.active
        if active is not None:
            found = await _answer(active(self.name))
            if not _strings(found):
                raise ValidationError("active", f"returned {found!r}: expected a list of strings")
            return list(found)
        if self.handler_type is None:
            return []
        store = await self._open()
        return await store.active_ids(self.name, MAX_ACTIVE)

    async def _schedule(self, ctx: PollContext) -> list[str]:
        scheduler = self.scheduler
        async with asyncio.timeout(self.settings.timeout):
            if inspect.iscoroutinefunction(scheduler):
                found = await scheduler(ctx)
            else:
                found = await _answer(await asyncio.to_thread(scheduler, ctx))
        if not _strings(found):
            raise UnexpectedTaskInstructionsError(self.name, found)
        return list(found)

    async def _dispatch(self, instructions: list[str], lease: CallLease, report: _Report) -> None:
        dispatched = instructions
        problems: Sequence[Exception] = ()
        try:
            if self.handler_type is not None:
                store = await self._open()
                dispatched, problems = await dispatch(
                    store, self.name, instructions, self._now_ms, lease
                )
            elif not await lease.holds():  # no write to fence: its events are what it gives
                raise lease.lost("taken over, or ran out while the store failed")
        except LeaseLost as exc:
            log.error("%s: instructions refused (%s): %s", self.name, exc, instructions)
            self._failed(report, exc, f"{len(instructions)} instructions not dispatched")
            return
        except Exception as exc:
            log.error("%s: instructions lost, the store failed: %s", self.name, instructions)
            self._failed(report, exc, "dispatching failed")
            return
        for problem in problems:
            self._failed(report, problem, "an instruction was not dispatched")
        report.dispatched += dispatched

    async def _delay_ms(self, attempt: int, report: _Report) -> int:
        try:
            wait = await _answer(self.settings.delay(attempt))
            if isinstance(wait, timedelta):
                wait = wait.total_seconds()
            if isinstance(wait, bool) or not isinstance(wait, int | float):
                raise ValidationError("delay", f"returned {wait!r}: expected seconds")
            if not (math.isfinite(wait) and wait >= 0):
                raise ValidationError("delay", f"returned {wait!r}: expected seconds, 0 or more")
            return min(round(wait * 1000), MAX_DELAY_MS)
        except Exception as exc:
            self._failed(report, exc, "its delay failed, the default applies")
            return round(default_delay(attempt) * 1000)

    def _failed(self, report: _Report, error: BaseException, what: str) -> None:
        # The traceback of what the user's code raised (the scheduler, its limit, its
        # delay); duetime's own errors and a time-out say all in their message.
        shown = not isinstance(error, DuetimeError | TimeoutError)
        log.warning("%s: %s: %r", self.name, what, error, exc_info=error if shown else None)
        report.errors.append(error)

    # -- its task -----------------------------------------------------------------------

    def first_tick(self, now_ms: int) -> NewTask:
        """The poller's task as a worker writes it when there is none: due now."""
        record = Record(tick_payload(0), POLL_TICK).encode()
        return NewTask(self.name, now_ms, record)


@dataclass(slots=True)
class _Report:
    """What one call did: the instructions it dispatched, and the errors on the way."""

    dispatched: list[str] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)


def _strings(found: object) -> bool:
    return isinstance(found, list | tuple) and all(isinstance(i, str) for i in found)
