"""The App's calls on results: ``app.result(type, id, wait=None)``, and ``app.get``'s
``TaskInfo.result``."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from duetime.errors import TaskNotFound
from duetime.model import TaskInfo
from duetime.registry import AppSide
from duetime.stores.capabilities import RUN_HISTORY, has, require
from duetime.validate import check_id, duration_ms

if TYPE_CHECKING:
    from duetime.client import Client


class ResultCalls:
    """What an :class:`~duetime.App` tells of what handlers returned (a part of it).

    A result is kept with its run in the run history, so for as long as the history keeps
    that run (:class:`~duetime.History`), and only by the types that keep one.
    """

    async def result(
        self: AppSide,
        task_type: str,
        task_id: str,
        wait: timedelta | float | None = None,
    ) -> Any:
        """What the handler of the task's last finished run returned (None for nothing).

        Args:
            wait: wait up to this long (a timedelta or seconds) for a run to finish when
                the task is due or running (a periodic task: its next run), or not yet
                written; without it, the last finished run's result at once.

        Raises:
            TaskFailed: that run ended dead (with its error and traceback).
            TaskNotFound: no finished run of the task is in the history (without ``wait``).
            TimeoutError: none finished within ``wait``.
            ConfigError: the store keeps no run history.
            ValidationError: a bad type, id or wait.
        """
        self.task_type(task_type)
        check_id(task_id, stored=True)
        seconds = None if wait is None else duration_ms("wait", wait) / 1000
        require(self.store(), RUN_HISTORY, "app.result", self.where())
        from duetime.features.results.read import last_finished, result_of

        store = await self.open()
        if seconds is None:
            run = await last_finished(store, task_type, task_id)
            if run is None:
                raise TaskNotFound(task_type, task_id, "finished")
            return result_of(task_type, run)
        from duetime.features.results.wait import wait_finished

        run = await wait_finished(store, task_type, task_id, seconds)
        if run is None:
            raise TimeoutError(f"no run of {task_type}/{task_id} finished within {seconds:g} s")
        return result_of(task_type, run)

    async def get(self: AppSide, task_type: str, task_id: str) -> TaskInfo | None:
        """The task with this id, or None; with ``result``, what the handler of its last
        finished run returned, for a task that stays as it runs (a series, a cron
        schedule, a poller: not a one-off task, whose runs leave it behind) when that run
        ended done and the store keeps a history."""
        from duetime.client import Client

        info = await Client.get(cast("Client", self), task_type, task_id)
        if info is None or info.kind == "once" or not has(self.store(), RUN_HISTORY):
            return info  # no history read for a one-off task: it has not finished
        from duetime.features.results.read import last_finished

        run = await last_finished(await self.open(), task_type, task_id)
        if run is None or run.outcome != "done" or run.result is None:
            return info
        import json

        return replace(info, result=json.loads(run.result))
