"""duetime.asgi.lifespan in Starlette and FastAPI apps served by uvicorn in the test's event
loop: the store opened and closed with the web app, a worker in its event loop, and the
tasks that worker holds handed back at shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Coroutine
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

import duetime
from duetime.asgi import lifespan
from duetime.clock import Clock
from duetime.stores.base import Store
from tests.helpers import eventually


@pytest.fixture
async def app(redis_or_sqlite_url: str, namespace: str) -> AsyncIterator[duetime.App]:
    app = duetime.App(redis_or_sqlite_url, namespace=namespace)
    yield app
    await app.close()


@contextlib.asynccontextmanager
async def serving(web: object) -> AsyncIterator[httpx.AsyncClient]:
    """``web`` served by uvicorn in this event loop (lifespan on), and a client of it."""
    server = uvicorn.Server(
        uvicorn.Config(web, host="127.0.0.1", port=0, lifespan="on", log_level="warning")  # type: ignore[arg-type]
    )
    run = asyncio.create_task(server.serve())
    try:
        await eventually(lambda: server.started or run.done(), within=10, what="uvicorn up")
        assert server.started, "the web app did not start"
        port = server.servers[0].sockets[0].getsockname()[1]
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            yield client
    finally:
        server.should_exit = True
        await asyncio.wait_for(run, 30)


async def test_the_store_opens_and_closes_with_a_starlette_app(app: duetime.App) -> None:
    app.declare("mail")

    async def schedule(request: Request) -> JSONResponse:
        due = await app.schedule("mail", request.path_params["id"], delay=3600)
        return JSONResponse({"due": due.isoformat()})

    routes = [Route("/mail/{id}", schedule, methods=["POST"])]
    web = Starlette(routes=routes, lifespan=lifespan(app))
    with pytest.raises(duetime.DuetimeError, match="not open"):
        app.clock  # noqa: B018 - the property raises while the app is closed
    async with serving(web) as client:
        app.clock  # noqa: B018 - open from start-up on
        assert (await client.post("/mail/m1")).status_code == 200
    with pytest.raises(duetime.DuetimeError, match="not open"):
        app.clock  # noqa: B018 - closed at shutdown
    async with app:
        info = await app.get("mail", "m1")
        assert info is not None and info.state == "due"


async def test_a_worker_runs_in_a_fastapi_app_and_stops_with_it(app: duetime.App) -> None:
    mailed: list[str] = []

    @app.task("mail")
    async def mail(payload: dict[str, Any]) -> None:
        mailed.append(payload["to"])

    hosted = lifespan(app, worker=True, grace=5)
    web = FastAPI(lifespan=hosted)

    @web.post("/mail")
    async def send(to: str) -> dict[str, str]:
        await app.schedule("mail", to, payload={"to": to})
        return {"scheduled": to}

    @web.get("/mail/{to}")
    async def state(to: str) -> dict[str, str]:
        info = await app.get("mail", to)
        return {"state": "sent" if info is None else info.state}

    assert hosted.worker is None
    async with serving(web) as client:
        assert hosted.worker is not None and hosted.worker.types == ["mail"]
        reply = await client.post("/mail", params={"to": "ana@example.com"})
        assert reply.json() == {"scheduled": "ana@example.com"}

        async def sent() -> bool:
            reply = await client.get("/mail/ana@example.com")
            return bool(reply.json() == {"state": "sent"})

        await eventually(sent, what="the mail sent by the worker in the web app")
        assert mailed == ["ana@example.com"]
    assert hosted.worker is None


async def test_shutdown_hands_back_what_the_worker_holds(app: duetime.App) -> None:
    entered = asyncio.Event()

    @app.task("slow", concurrency=2)
    async def slow(payload: dict[str, Any]) -> None:
        entered.set()
        await asyncio.sleep(3600)

    hosted = lifespan(app, worker=True, grace=0.2)
    async with hosted(None):
        assert hosted.worker is not None
        await app.schedule("slow", "s1")
        await asyncio.wait_for(entered.wait(), 10)
        info = await app.get("slow", "s1")
        assert info is not None and info.state == "running"
    # Cut short at the end of the grace period, and handed back: due again, not running
    # under a lease until it expires.
    async with app:
        info = await app.get("slow", "s1")
        assert info is not None and info.state == "due"


async def test_a_worker_that_cannot_start_stops_the_web_app_from_starting(
    app: duetime.App,
) -> None:
    @app.task("mail")
    async def mail(payload: dict[str, Any]) -> None: ...

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        hosted = lifespan(app, worker=True, health_port=port)
        with pytest.raises(duetime.ConfigError, match="the port is in use"):
            async with hosted(None):
                raise AssertionError("the web app started")
    assert hosted.worker is None
    with pytest.raises(duetime.DuetimeError, match="not open"):
        app.clock  # noqa: B018 - closed again


class FailsLater(duetime.Listener):
    """A listener whose loop raises once told to: the worker's run ends with it."""

    def __init__(self) -> None:
        self.fail = asyncio.Event()

    def loops(self, store: Store, clock: Clock) -> list[Coroutine[Any, Any, None]]:
        return [self._loop()]

    async def _loop(self) -> None:
        await self.fail.wait()
        raise RuntimeError("boom")


async def test_a_worker_that_fails_while_the_web_app_runs_is_logged(
    app: duetime.App, caplog: pytest.LogCaptureFixture
) -> None:
    @app.task("mail")
    async def mail(payload: dict[str, Any]) -> None: ...

    failing = FailsLater()
    hosted = lifespan(app, worker=True, listeners=[failing])
    async with hosted(None):
        assert hosted.worker is not None
        failing.fail.set()
        await eventually(
            lambda: "the worker in this web app stopped" in caplog.text, what="the log line"
        )
        assert "RuntimeError('boom')" in caplog.text
    # The web app's shutdown went on regardless.
    with pytest.raises(duetime.DuetimeError, match="not open"):
        app.clock  # noqa: B018 - closed at shutdown


def test_worker_options_need_worker_true(app: duetime.App) -> None:
    with pytest.raises(duetime.ValidationError, match="worker"):
        lifespan(app, grace=5)


def test_the_lifespan_imports_no_web_framework(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "import duetime.asgi\n"
        "assert not {'starlette', 'fastapi'} & set(sys.modules), sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=tmp_path)
