"""duetime inside an ASGI web app (FastAPI, Starlette): the store opened and closed with the
app, and, if asked, a worker running in the server's event loop.

::

    from fastapi import FastAPI
    from duetime.asgi import lifespan

    web = FastAPI(lifespan=lifespan(app, worker=True))

Nothing here imports a web framework: :func:`lifespan` follows the ``lifespan=`` convention
of Starlette and FastAPI (a callable taking the web app and returning an async context
manager), so no extra is needed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from duetime.errors import ValidationError

if TYPE_CHECKING:
    from duetime.app import App
    from duetime.worker import Worker

log = logging.getLogger(__name__)


class Lifespan:
    """The life of an App inside a web app; see :func:`lifespan`.

    Attributes:
        worker: the worker running in the server's event loop, while it runs (None
            without ``worker=True``, and before start-up and after shutdown).
    """

    def __init__(
        self, app: App, run_worker: bool, types: Sequence[str] | None, options: dict[str, Any]
    ) -> None:
        self.app = app
        self.worker: Worker | None = None
        self._run_worker = run_worker
        self._types = types
        self._options = options

    def __call__(self, web_app: object = None) -> contextlib.AbstractAsyncContextManager[None]:
        """The context manager of one run of the web app (``web_app`` is not used)."""
        return self._running()

    @contextlib.asynccontextmanager
    async def _running(self) -> AsyncIterator[None]:
        app = self.app
        await app.open()  # a store that cannot be reached stops the web app from starting
        try:
            if not self._run_worker:
                yield
                return
            worker = app.worker(self._types, **self._options)
            task = asyncio.create_task(worker.run(), name="duetime-worker")
            await _started(worker, task)
            task.add_done_callback(_report_end)
            self.worker = worker
            try:
                yield
            except BaseException:
                worker.stop(now=True)  # the server is failing: hand every task back now
                raise
            finally:
                worker.stop()  # no-op after stop(now=True)
                # Its handlers get their grace period; what it claimed and did not start, or
                # cut short, goes back to the store.
                await asyncio.wait([task])
                self.worker = None
        finally:
            await app.close()


def lifespan(
    app: App, *, worker: bool = False, types: Sequence[str] | None = None, **worker_options: Any
) -> Lifespan:
    """A ``lifespan=`` for Starlette or FastAPI that opens ``app``'s store at start-up and
    closes it at shutdown; with ``worker=True``, it also runs a worker of ``app`` (for
    ``types``, default every type with a handler) in the server's event loop, started
    before the server takes requests and stopped gracefully at shutdown.

    At shutdown the worker stops claiming; running handlers get ``grace`` seconds (30 by
    default) to finish, then are cut short, and every task it claimed but did not finish
    is handed back to the store for another worker. ``worker_options`` are
    :meth:`App.worker`'s (``grace``, ``metrics_port``, ``health_port``, ...).

    To add start-up and shutdown of your own, enter it inside yours::

        duetime_lifespan = lifespan(app, worker=True)

        @contextlib.asynccontextmanager
        async def web_lifespan(web):
            async with duetime_lifespan(web):
                ...  # your start-up, with the store open and the worker claiming
                yield
                ...  # your shutdown, before the worker stops

    Raises:
        ValidationError: worker options without ``worker=True``. At start-up, any
            DuetimeError that keeps the store from opening or the worker from starting (a
            bad option, a port in use): the web app does not start.
    """
    if not worker and (types is not None or worker_options):
        raise ValidationError("worker", "worker options given without worker=True")
    return Lifespan(app, worker, types, dict(worker_options))


async def _started(worker: Worker, task: asyncio.Task[None]) -> None:
    """Wait until ``worker`` claims, or raise what ended its run first."""
    claiming = asyncio.create_task(worker.started.wait())
    try:
        await asyncio.wait([task, claiming], return_when=asyncio.FIRST_COMPLETED)
    finally:
        claiming.cancel()
    if task.done():
        task.result()  # the worker's own error (a port in use, a store refused)
        raise RuntimeError("the worker ended as it started")


def _report_end(task: asyncio.Task[None]) -> None:
    """Log a worker that ended by itself while the web app runs on without it."""
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None:
        log.error("the worker in this web app stopped: %r", exc, exc_info=exc)
