"""The App's calls on the flow of a task type across every worker: pause, resume, and which
types are paused."""

from __future__ import annotations

from duetime.registry import AppSide
from duetime.stores.capabilities import GATES, use


class FlowCalls:
    """Pausing and resuming task types, for every worker of the store (a part of the App).

    A pause is kept in the store: it outlives restarts of the workers and of this process,
    and holds until :meth:`resume`. For one worker alone, ``Worker.pause`` stops its claims
    of a type without touching the store.
    """

    async def pause(self: AppSide, task_type: str) -> bool:
        """Stop every worker starting tasks of ``task_type``, within a second (a wake-up
        tells them); handlers running finish, due tasks wait (no attempt is counted), and
        the ticks of its cron schedules come due as usual and follow their missed-tick
        policy once resumed.

        Returns:
            False when it was paused already.

        Raises:
            ValidationError: a type the app neither registered nor declared (UnknownTaskType).
        """
        self.task_type(task_type)
        return await use(await self.open(), GATES).set_paused(task_type, True)

    async def resume(self: AppSide, task_type: str) -> bool:
        """Let workers start tasks of a paused ``task_type`` again, within a second.

        Returns:
            False when it was not paused.

        Raises:
            ValidationError: a type the app neither registered nor declared (UnknownTaskType).
        """
        self.task_type(task_type)
        return await use(await self.open(), GATES).set_paused(task_type, False)

    async def paused(self: AppSide) -> set[str]:
        """The task types of this namespace paused now (the app's and any other's)."""
        return set(await use(await self.open(), GATES).paused_types())
