"""A blocking client for code that is not async: a Flask or Django view, a script."""

from __future__ import annotations

import asyncio
import builtins
import concurrent.futures
import logging
import threading
from collections.abc import Coroutine, Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast, overload

from duetime.calls.adapters import driver_connection
from duetime.errors import ClientClosed
from duetime.model import Task, TaskInfo
from duetime.stores.base import State

if TYPE_CHECKING:
    from duetime.calls.aborts import AbortStatus
    from duetime.client import Client
    from duetime.features.cron.manage import CronInfo
    from duetime.features.history.runs import RunInfo

T = TypeVar("T")

log = logging.getLogger(__name__)


class Operated(Protocol):
    """The App's own calls (beyond the Client's) that the blocking client offers."""

    async def pause(self, task_type: str) -> bool: ...

    async def resume(self, task_type: str) -> bool: ...

    async def paused(self) -> set[str]: ...

    async def history(
        self, task_type: str, task_id: str | None = None, *, limit: int = ...
    ) -> list[RunInfo]: ...

    async def result(
        self, task_type: str, task_id: str, wait: timedelta | float | None = None
    ) -> Any: ...


#: How long :meth:`SyncClient.close` waits for the calls in flight, and then for the store
#: to close, before it cuts them short.
CLOSE_TIMEOUT_SECONDS = 10.0


class SyncClient:
    """The producer calls of an :class:`~duetime.app.App`, blocking.

    It runs its own event loop in a background thread with its own store connection, so it
    can be used from any thread, including one that runs another event loop. Close it with
    :meth:`close` or a ``with`` block.
    """

    def __init__(self, app: Client) -> None:
        self._app = app.detached()  # the same registry, on a connection of its own
        # App.sync() makes it, so the app has the App's calls too.
        self._ops = cast(Operated, self._app)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="duetime-sync", daemon=True
        )
        self._thread.start()
        # Guards _closed and _in_flight: a call either starts before close() begins, and is
        # waited for, or is refused.
        self._lock = threading.Lock()
        self._closed = False
        self._in_flight: set[concurrent.futures.Future[Any]] = set()

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        with self._lock:
            if self._closed:
                coro.close()
                raise ClientClosed("the SyncClient is closed")
            future = asyncio.run_coroutine_threadsafe(coro, self._loop)
            self._in_flight.add(future)
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            raise ClientClosed(
                "the SyncClient was closed while this call ran: its outcome is unknown"
            ) from None
        finally:
            with self._lock:
                self._in_flight.discard(future)

    @overload
    def schedule(
        self, task_type: str, task_id: str, *, unique_for: None = None, **options: Any
    ) -> datetime: ...

    @overload
    def schedule(
        self, task_type: str, task_id: str, *, unique_for: timedelta | float, **options: Any
    ) -> datetime | None: ...

    def schedule(
        self,
        task_type: str,
        task_id: str,
        *,
        unique_for: timedelta | float | None = None,
        **options: Any,
    ) -> datetime | None:
        """See :meth:`App.schedule`."""
        _here(options)
        call = self._app.schedule(task_type, task_id, unique_for=unique_for, **options)
        return self._call(call)

    def submit(self, task_type: str, **options: Any) -> str:
        """See :meth:`App.submit`."""
        _here(options)
        return self._call(self._app.submit(task_type, **options))

    def schedule_many(self, tasks: Iterable[Task], *, connection: object = None) -> int:
        """See :meth:`App.schedule_many`."""
        connection = driver_connection(connection)
        return self._call(self._app.schedule_many(list(tasks), connection=connection))

    def cancel(self, task_type: str, task_id: str, *, connection: object = None) -> bool:
        """See :meth:`App.cancel`."""
        connection = driver_connection(connection)
        return self._call(self._app.cancel(task_type, task_id, connection=connection))

    def abort(self, task_type: str, task_id: str) -> AbortStatus:
        """See :meth:`App.abort`."""
        return self._call(self._app.abort(task_type, task_id))

    def retry(self, task_type: str, task_id: str, *, at: datetime | None = None) -> datetime:
        """See :meth:`App.retry`."""
        return self._call(self._app.retry(task_type, task_id, at=at))

    def run_now(self, task_type: str, task_id: str) -> datetime:
        """See :meth:`App.run_now`."""
        return self._call(self._app.run_now(task_type, task_id))

    def next_occurrences(self, task_type: str, task_id: str, n: int) -> list[datetime]:
        """See :meth:`App.next_occurrences`."""
        return self._call(self._app.next_occurrences(task_type, task_id, n))

    def get(self, task_type: str, task_id: str) -> TaskInfo | None:
        """See :meth:`App.get`."""
        return self._call(self._app.get(task_type, task_id))

    def list(
        self, task_type: str, state: State = "due", *, limit: int = 100, offset: int = 0
    ) -> list[TaskInfo]:
        """See :meth:`App.list`."""
        return self._call(self._app.list(task_type, state, limit=limit, offset=offset))

    def counts(self, task_type: str) -> dict[State, int]:
        """See :meth:`App.counts`."""
        return self._call(self._app.counts(task_type))

    # An operator's calls: flow control, run history, cron schedules.

    def pause(self, task_type: str) -> bool:
        """See :meth:`App.pause`."""
        return self._call(self._ops.pause(task_type))

    def resume(self, task_type: str) -> bool:
        """See :meth:`App.resume`."""
        return self._call(self._ops.resume(task_type))

    def paused(self) -> set[str]:
        """See :meth:`App.paused`."""
        return self._call(self._ops.paused())

    def history(
        self, task_type: str, task_id: str | None = None, *, limit: int = 50
    ) -> builtins.list[RunInfo]:
        """The recent runs of a type or of one task, newest first: see :meth:`App.history`."""
        return self._call(self._ops.history(task_type, task_id, limit=limit))

    def result(self, task_type: str, task_id: str, wait: timedelta | float | None = None) -> Any:
        """What the task's last finished run returned: see :meth:`App.result`."""
        return self._call(self._ops.result(task_type, task_id, wait))

    def add_cron(self, name: str, expression: str, *, task: str, **options: Any) -> bool:
        """See :meth:`App.add_cron`."""
        return self._call(self._app.add_cron(name, expression, task=task, **options))

    def crons(self) -> builtins.list[CronInfo]:
        """See :meth:`App.crons`."""
        return self._call(self._app.crons())

    def trigger_cron(self, name: str) -> str:
        """See :meth:`App.trigger_cron`."""
        return self._call(self._app.trigger_cron(name))

    def backfill_cron(self, name: str, *, start: datetime, end: datetime) -> int:
        """See :meth:`App.backfill_cron`."""
        return self._call(self._app.backfill_cron(name, start=start, end=end))

    def pause_cron(self, name: str) -> None:
        """See :meth:`App.pause_cron`."""
        self._call(self._app.pause_cron(name))

    def resume_cron(self, name: str) -> None:
        """See :meth:`App.resume_cron`."""
        self._call(self._app.resume_cron(name))

    def remove_cron(self, name: str) -> bool:
        """See :meth:`App.remove_cron`."""
        return self._call(self._app.remove_cron(name))

    def close(self, timeout: float = CLOSE_TIMEOUT_SECONDS) -> None:
        """Refuse new calls, wait up to ``timeout`` seconds for the calls in flight, cut
        short those still going (they raise :class:`~duetime.ClientClosed`), then close
        the store and stop the background loop. Safe to call twice.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            in_flight = list(self._in_flight)
        _, stuck = concurrent.futures.wait(in_flight, timeout)
        for future in stuck:
            future.cancel()
        closing = asyncio.run_coroutine_threadsafe(self._app.close(), self._loop)
        try:
            closing.result(timeout)
        except Exception as exc:  # a store that will not close must not block the caller
            closing.cancel()
            log.warning("the SyncClient's store did not close cleanly: %r", exc)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _here(options: dict[str, Any]) -> None:
    """The driver connection of ``connection=``, found in the caller's thread (a Django
    connection is the calling thread's)."""
    if options.get("connection") is not None:
        options["connection"] = driver_connection(options["connection"])
