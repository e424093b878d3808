"""The PostgreSQL store's cron schedule names (the ``ScheduleNames`` capability): which task
type each name of the namespace belongs to, kept in a table of its own."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from duetime.stores.postgres import ops

if TYPE_CHECKING:
    from duetime.stores.postgres.config import PostgresConfig
    from duetime.stores.postgres.connection import Conn

T = TypeVar("T")


class PostgresScheduleNames:
    """The schedule names, a part of :class:`~.store.PostgresStore` (its config and its
    ``_run``, which runs a job on a pooled connection)."""

    config: PostgresConfig

    async def _run(self, what: str, job: Callable[[Conn], Awaitable[T]]) -> T:
        raise NotImplementedError  # the store's

    async def add_schedule_name(self, name: str, task_type: str) -> str:
        """Give the cron schedule ``name`` to ``task_type`` unless the name is taken;
        returns the task type the name belongs to."""
        ns = self.config.namespace
        return await self._run(
            "add_schedule_name", lambda c: ops.add_schedule_name(c, ns, name, task_type)
        )

    async def remove_schedule_name(self, name: str) -> None:
        """Forget the cron schedule ``name``. Safe to call twice."""
        ns = self.config.namespace
        await self._run("remove_schedule_name", lambda c: ops.remove_schedule_name(c, ns, name))

    async def schedule_names(self) -> dict[str, str]:
        """Every cron schedule name of the namespace, with the task type it lives in."""
        ns = self.config.namespace
        return await self._run("schedule_names", lambda c: ops.schedule_names(c, ns))
