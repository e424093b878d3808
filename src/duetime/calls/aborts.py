"""Aborting a task's running handler, on whichever worker runs it: the client's call and
what it says (:data:`AbortStatus`)."""

from __future__ import annotations

from typing import Literal

from duetime.registry import ClientSide
from duetime.stores.base import AbortFound
from duetime.validate import check_id

#: What :meth:`~duetime.App.abort` did:
#:
#: - ``"aborted"``: a run was marked to abort; the worker running it raises
#:   :class:`asyncio.CancelledError` in its handler within a second.
#: - ``"not_interruptible"``: a run was marked to abort, but its handler is a plain
#:   ``def`` running in a thread, which cannot be interrupted: it runs on, and its result
#:   is discarded (the run ends as aborted all the same).
#: - ``"cancelled"``: the task was not running: it was cancelled, as ``cancel`` does.
#: - ``"not_found"``: there is no such task.
AbortStatus = Literal["aborted", "not_interruptible", "cancelled", "not_found"]
ABORT_STATUSES: tuple[AbortStatus, ...] = ("aborted", "not_interruptible", "cancelled", "not_found")

_STATUS: dict[AbortFound, AbortStatus] = {
    "running": "aborted",
    "cancelled": "cancelled",
    "missing": "not_found",
}


class AbortCalls:
    """``abort``: a part of the client (and the App)."""

    async def abort(self: ClientSide, task_type: str, task_id: str) -> AbortStatus:
        """Abort the task's running handler, on whichever worker runs it; cancel the task
        if it is not running.

        The worker holding the run is found through the store and told at once (within a
        second): an ``async def`` handler gets :class:`asyncio.CancelledError` where it
        waits, and the worker's grace to clean up (it may catch the cancellation; it is
        cancelled again once the grace is over). The run is not retried and does not go to
        the dead letters: a one-off task ends; a periodic task or a cron schedule goes on
        with its next occurrence (cancel it as well to stop it). A plain ``def`` handler
        cannot be interrupted: it runs on in its thread and its result is discarded.

        A task that is not running is cancelled, as :meth:`cancel` does (a series with it).

        Returns:
            An :data:`AbortStatus`. ``"not_interruptible"`` needs the handler: a process
            that only declared the type (``app.declare``, ``duetime --url``) cannot tell a
            plain ``def`` handler, and says ``"aborted"``.

        Raises:
            ValidationError: a bad task id.
            UnknownTaskType: the type is neither registered nor declared.
        """
        kind = self.task_type(task_type)
        check_id(task_id, stored=True)
        status = _STATUS[await (await self.open()).abort(task_type, task_id)]
        if status == "aborted" and kind.handler is not None and not kind.is_async:
            return "not_interruptible"
        return status
