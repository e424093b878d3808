"""The App's calls on pollers: the ``@app.poller`` decorator, and ``app.events``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from duetime.errors import DuplicateTaskNameError
from duetime.features.pollers.defaults import POLLER_LEASE, default_delay, default_limit
from duetime.features.pollers.feature import PollerFeature
from duetime.features.pollers.registry import Pollers, poller_type
from duetime.model import DEFAULT_TIMEOUT
from duetime.registry import AppSide
from duetime.tasktype import Handler, TaskType, call_mode
from duetime.validate import check_name, duration_ms

if TYPE_CHECKING:
    from duetime.features.pollers.events import PollerEvents
    from duetime.features.pollers.poller import Active, Delay, Limit, Poller, Scheduler


class PollerCalls:
    """The pollers of an :class:`~duetime.App` (a part of it)."""

    @property
    def pollers(self: AppSide) -> Pollers:
        """The app's pollers, by name."""
        return self.registry.get(PollerFeature).pollers

    @property
    def events(self: AppSide) -> PollerEvents:
        """The listeners of the app's pollers' ``task`` and ``error`` events (Planton's):
        ``app.events.on("task", fn)``."""
        return self.registry.get(PollerFeature).events

    def poller(
        self: AppSide,
        name: str,
        *,
        concurrency: int = 1,
        delay: Delay = default_delay,
        calculate_limit: Limit = default_limit,
        active: Active | None = None,
        timeout: timedelta | float | None = DEFAULT_TIMEOUT,
        lease: timedelta | float = POLLER_LEASE,
    ) -> Callable[[Scheduler], Poller]:
        """Register the decorated function as the scheduler of the poller ``name``
        (Planton's task): called with a :class:`~duetime.PollContext` by one worker at a
        time, it returns instructions (strings), at most ``ctx.limit`` of them. With
        ``@poller.handler``, each becomes a task of type ``name`` whose id is the
        instruction; without, they only go to ``app.events`` listeners.

        Args:
            concurrency: the most instructions active at once, across every worker.
            delay: ``(attempt) -> seconds`` (a number or timedelta; may be async): the wait
                before the next call, ``attempt`` counting the calls in a row that produced
                nothing; see :func:`~duetime.features.pollers.poller.default_delay`.
            calculate_limit: ``(concurrency, active_instructions) -> int`` (may be async);
                by default the free slots. The scheduler is not called while it is 0 or less.
            active: ``(name) -> list[str]`` (may be async): the active instructions, for
                instructions run elsewhere; by default the pending and running tasks of
                the handler's type (none without a handler).
            timeout: how long one call of the scheduler may take.
            lease: how long a worker that stopped answering (killed, frozen, cut off)
                holds the poller's call before another worker takes it over; renewed while
                the call runs. 10 s by default.

        Raises:
            DuplicateTaskNameError: ``name`` is taken by a task type or another poller.
            InvalidTaskConfigurationError: a concurrency below 1, a delay, limit or active
                that is not callable, or a worker of this app runs already.
        """
        from duetime.features.pollers.poller import Poller, PollerSettings  # with a poller only

        check_name("name", name)
        seconds = None if timeout is None else duration_ms("timeout", timeout) / 1000
        lease_ms = duration_ms("lease", lease)
        settings = PollerSettings(concurrency, delay, calculate_limit, active, seconds, lease_ms)
        settings.check(name)
        pollers = self.registry.get(PollerFeature).pollers
        pollers.check_open(name)
        app = self

        def add_handler(name: str, fn: Handler, options: dict[str, Any]) -> TaskType:
            pollers.check_open(name)
            task_type = app.task(name, **options)(fn)
            takes = ("instruction",)
            task_type.mode, task_type.takes = call_mode(fn, takes=takes), takes
            return task_type

        def register(scheduler: Scheduler) -> Poller:
            app.types.check_free(name)
            if name in pollers.by_name:
                raise DuplicateTaskNameError(name, "another poller")
            poller = Poller(
                name,
                scheduler,
                settings,
                add_handler=add_handler,
                open_store=app.open,
                now_ms=app.now_ms,
            )
            pollers.add(poller)
            app.types.add(poller_type(poller, app.types.scheduler))
            return poller

        return register
