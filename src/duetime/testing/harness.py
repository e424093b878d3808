"""The test harness: an app on a store of the test's own and a clock the test moves, and the
due tasks run in the test's event loop by the worker's own pieces."""

from __future__ import annotations

import contextlib
import secrets
import shutil
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from duetime.clock import ManualClock, SystemClock, from_ms
from duetime.errors import ValidationError
from duetime.model import TaskInfo
from duetime.stores import open_store
from duetime.testing.runs import Run, RunRecorder
from duetime.validate import duration_ms, to_ms
from duetime.worker.burst import Burst

if TYPE_CHECKING:
    from duetime.app import App
    from duetime.stores.base import Store

#: Tasks read per listing call while :meth:`Harness.due` gathers what is due.
PAGE = 500
#: Characters of the app's namespace kept in a harness's fresh one (a name has at most 64).
NAMESPACE_KEPT = 40


def harness(app: App, *, url: str | None = None, start: datetime | None = None) -> Harness:
    """A harness for ``app``: ``async with harness(app) as h:`` gives it a store and a clock
    of the test's own until the block ends.

    Args:
        app: the app under test; its handlers, cron schedules, expiring groups and pollers
            are the ones that run.
        url: a store to use instead of a fresh SQLite file in a temporary directory (a
            Redis or PostgreSQL URL, say): the harness works in a fresh namespace of it.
        start: where the harness's clock starts, an aware datetime; default: now, to the
            second.
    """
    return Harness(app, url=url, start=start)


class Harness:
    """An app on a store of its own and a clock that moves only when told to.

    Within ``async with``, every call on the app (``app.schedule``, ``app.get``, an
    expiring group's ``put``, ...) goes to the harness's store and reads the harness's
    clock; the app's own store is never opened or written (no ``duetime.db`` appears).
    On exit, also on an exception, the harness's store is closed (the temporary file
    removed) and the app is as it was. One harness at a time per app.

    Attributes:
        app: the app under test.
        clock: the clock the app reads while the harness is entered.
        url: the store's URL (set once entered).
        namespace: the namespace in it.
    """

    def __init__(self, app: App, *, url: str | None = None, start: datetime | None = None):
        from duetime.app import App

        if not isinstance(app, App):
            raise ValidationError("app", f"must be a duetime.App, not {type(app).__name__}")
        self.app = app
        self._given_url = url
        self._start_ms = None if start is None else to_ms("start", start)
        self.clock = ManualClock(self._start_ms or 0)
        self.url = ""
        self.namespace = app.namespace
        self._stack: contextlib.AsyncExitStack | None = None

    # -- in and out ---------------------------------------------------------------------

    async def __aenter__(self) -> Harness:
        if self._stack is not None:
            raise RuntimeError("this harness is entered already")
        start = self._start_ms
        if start is None:
            start = SystemClock().now_ms() // 1000 * 1000
        self.clock.set(start)
        async with contextlib.AsyncExitStack() as stack:
            store = self._store(stack)
            await stack.enter_async_context(self.app.using(store, clock=self.clock))
            await self.app.open()  # refused here if a feature of the app needs more
            await self._write_declared()
            self._stack = stack.pop_all()
        return self

    async def __aexit__(self, *exc: object) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    def _store(self, stack: contextlib.AsyncExitStack) -> Store:
        app = self.app
        if self._given_url is None:
            folder = tempfile.mkdtemp(prefix="duetime-test-")
            stack.callback(shutil.rmtree, folder, ignore_errors=True)
            url = f"sqlite:///{Path(folder) / 'duetime.db'}"
            namespace = app.namespace
        else:
            url = self._given_url
            namespace = f"{app.namespace[:NAMESPACE_KEPT]}.test-{secrets.token_hex(6)}"
        store = open_store(
            url,
            namespace=namespace,
            allow_eviction=app.allow_eviction,
            durability=app.durability,
        )
        self.url, self.namespace = url, namespace
        return store

    async def _write_declared(self) -> None:
        """What a worker writes as it starts (cron schedules, pollers' tasks), as of the
        harness's start; an app without handlers runs nothing, and declares nothing."""
        if any(t.handler is not None for t in self.app.types.values()):
            await self.app.worker(monitored=False).write_declared()

    def _entered(self) -> None:
        if self._stack is None:
            raise RuntimeError("use the harness inside `async with harness(app) as h:`")

    # -- time -------------------------------------------------------------------------

    @property
    def now(self) -> datetime:
        """The harness's time now (aware, UTC): the app's "now" while it is entered."""
        return from_ms(self.clock.now_ms())

    def advance(self, delta: timedelta | float) -> datetime:
        """Move the clock forward by ``delta`` (a timedelta, or seconds); returns the new
        :attr:`now`. Nothing runs until :meth:`run_due`.

        Raises:
            ValidationError: ``delta`` is negative (time never goes back) or not a duration.
        """
        self.clock.advance(duration_ms("delta", delta, allow_zero=True))
        return self.now

    # -- tasks ------------------------------------------------------------------------

    async def due(self, task_type: str | None = None) -> list[TaskInfo]:
        """The tasks due by :attr:`now` and not running, earliest first: of ``task_type``,
        or of every type the app knows (a cron schedule and a poller's calls are tasks too).

        Raises:
            UnknownTaskType: the app does not know ``task_type``.
        """
        self._entered()
        now = self.now
        names = sorted(self.app.types) if task_type is None else [task_type]
        found: list[TaskInfo] = []
        for name in names:
            offset = 0
            while True:
                page = await self.app.list(name, "due", limit=PAGE, offset=offset)
                found += [t for t in page if t.due is not None and t.due <= now]
                if len(page) < PAGE or (page[-1].due is not None and page[-1].due > now):
                    break
                offset += PAGE
        return sorted(found, key=lambda t: (t.due or now, t.task_type, t.task_id))

    async def run_due(self, *, max_runs: int = 1000) -> list[Run]:
        """Run, in this event loop, every task due by :attr:`now`, then what that makes due
        by now (retries without a back-off, a series' occurrences, a cron tick handed on,
        an expiry, a poller's next call), until nothing is due by now.

        A worker of every type with a handler does it, in a burst, with the worker's own
        claims, triggers, retries, dead letters and listeners; plain ``def`` handlers run in
        a thread, as in a worker. It works in rounds: what is due is claimed (each type up
        to its concurrency), run, and settled, then the next round is claimed, so the same
        tasks run in the same order every time. A retry whose back-off ends later waits for
        :meth:`advance`.

        Args:
            max_runs: claim at most this many tasks (a guard against a task that keeps
                coming due); what is left stays due for the next call.

        Returns:
            One :class:`Run` per task that ran, in the order they were claimed.
        """
        self._entered()
        recorder = RunRecorder()
        worker = self.app.worker(
            burst=Burst(max_runs=max_runs, rounds=True), monitored=False, listeners=[recorder]
        )
        await worker.run()
        return recorder.runs()
