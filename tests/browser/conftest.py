"""The browser tests' machinery: the system's Chromium driven by Playwright (never a
downloaded browser), the dashboard served by uvicorn on a free port of this machine over a
real store, and a second local origin to attack it from.

The dashboard runs in a thread with an event loop of its own, over an App of its own made
from the store's URL alone (what ``duetime dashboard --url`` makes); the test's App, in the
test's loop, writes the tasks and reads the store afterwards."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import pytest_asyncio
import uvicorn
from playwright.async_api import Browser, BrowserContext, Page, ViewportSize, async_playwright

import duetime
from duetime.web import create_app
from duetime.web.serve import access_for
from duetime.worker import Worker
from tests.servers import RedisServer

TOKEN = "browser-test-token"
#: Where to find Chromium when it is not on the PATH as ``chromium``.
CHROMIUM_ENV = "DUETIME_TEST_CHROMIUM"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
#: How long one browser step may wait (a page, a click, an element) before the test fails.
STEP_MS = 10_000


def chromium_executable() -> str:
    given = os.environ.get(CHROMIUM_ENV)
    if given:
        return given
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path is not None:
            return path
    pytest.fail(
        "Chromium is not installed, and the dashboard's browser tests drive it: run "
        f"scripts/ensure-chromium (or `make install`), or set {CHROMIUM_ENV} to a Chromium "
        "executable. No browser is downloaded.",
        pytrace=False,
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Browser]:
    executable = chromium_executable()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            await browser.close()


class Dashboard:
    """The dashboard served by uvicorn in a thread, on a port of 127.0.0.1."""

    def __init__(self, url: str, namespace: str) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self.base = f"http://127.0.0.1:{self.port}"
        access, _ = access_for("127.0.0.1", TOKEN, read_only=False)
        bare = duetime.App(url, namespace=namespace)  # no code: types and crons from the store
        web = create_app(bare, access=access, close_app=True)
        config = uvicorn.Config(
            web, log_level="warning", lifespan="on", timeout_graceful_shutdown=2
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, name="dashboard"
        )

    def __enter__(self) -> Dashboard:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert self.thread.is_alive(), "the dashboard's server stopped while starting"
            assert time.monotonic() < deadline, "the dashboard did not start in 10 s"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(15)
        self.sock.close()
        assert not self.thread.is_alive(), "the dashboard's server did not stop"

    def url(self, path: str) -> str:
        return self.base + path


class OtherOrigin:
    """Another site on this machine (another port of 127.0.0.1: another origin, though the
    same site for cookies): serves ``html`` at every path."""

    def __init__(self, html: str) -> None:
        body = html.encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, name="other-origin")

    def __enter__(self) -> OtherOrigin:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture(params=["sqlite"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The store's URL: SQLite unless a test asks for both (``BOTH_STORES``)."""
    if request.param == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        return server.url
    return f"sqlite:///{tmp_path / 'duetime.db'}"


#: Run a test on Redis and on SQLite.
BOTH_STORES = pytest.mark.parametrize("url", ["sqlite", "redis"], indirect=True)


@pytest_asyncio.fixture(loop_scope="module")
async def app(url: str, namespace: str) -> AsyncIterator[duetime.App]:
    """The test's App: ``mail`` succeeds, ``report`` fails with its payload's ``error`` (no
    retries), ``video`` takes a while; ``invoice`` and ``sms`` are only declared."""
    app = duetime.App(url, namespace=namespace)

    @app.task("mail")
    async def mail(payload: Any) -> None:
        await asyncio.sleep(0.005)

    @app.task("report", retries=0)
    async def report(payload: Any) -> None:
        raise RuntimeError((payload or {}).get("error", "report failed"))

    @app.task("video", concurrency=2)
    async def video(payload: Any) -> None:
        await asyncio.sleep(60)

    app.declare("invoice", "sms")
    yield app
    await app.close()


@pytest.fixture
def dashboard(url: str, namespace: str) -> Iterator[Dashboard]:
    with Dashboard(url, namespace) as served:
        yield served


class Watched:
    """What a browser context saw: script errors, dialogs, requests leaving this machine."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.elsewhere: list[str] = []


async def new_context(browser: Browser, watched: Watched) -> BrowserContext:
    """A browser context (its own cookies) that accepts confirm() dialogs and notes what
    ``watched`` holds."""
    context = await browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(STEP_MS)

    async def accept(dialog: Any) -> None:
        watched.dialogs.append(dialog.message)
        await dialog.accept()

    def on_page(page: Page) -> None:
        page.on("dialog", accept)
        page.on("pageerror", lambda error: watched.errors.append(str(error)))

    def on_request(request: Any) -> None:
        if urlsplit(request.url).hostname not in ("127.0.0.1", None):
            watched.elsewhere.append(request.url)

    context.on("page", on_page)
    context.on("request", on_request)
    return context


@pytest.fixture
def watched() -> Watched:
    return Watched()


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser, dashboard: Dashboard, watched: Watched) -> AsyncIterator[Page]:
    """A page in a context of its own, closed before the dashboard stops; afterwards, no
    script error happened and nothing was fetched from another machine."""
    context = await new_context(browser, watched)
    try:
        yield await context.new_page()
    finally:
        await context.close()
    assert not watched.errors, f"script errors on the dashboard: {watched.errors}"
    assert not watched.elsewhere, f"the dashboard fetched from elsewhere: {watched.elsewhere}"


async def log_in(page: Page, dashboard: Dashboard) -> None:
    """Log in as a user does, through /login?token=..., which lands on the overview."""
    response = await page.goto(dashboard.url(f"/login?token={TOKEN}"))
    assert response is not None and response.ok and urlsplit(page.url).path == "/"
    cookies = await page.context.cookies()
    assert any(c["name"] == "duetime_token" and c.get("httpOnly") for c in cookies)


@contextlib.asynccontextmanager
async def running_worker(app: duetime.App, types: Sequence[str]) -> AsyncIterator[Worker]:
    """A worker of ``types`` in this loop, stopped at once (handlers cut short) on exit."""
    worker = app.worker(types)
    run = asyncio.create_task(worker.run())
    started = asyncio.create_task(worker.started.wait())
    await asyncio.wait([run, started], timeout=10, return_when=asyncio.FIRST_COMPLETED)
    if run.done():
        started.cancel()
        run.result()  # raises what stopped the worker
    assert worker.started.is_set(), "the worker did not start in 10 s"
    try:
        yield worker
    finally:
        worker.stop(now=True)
        await asyncio.wait_for(run, 15)


async def wait_for(check: Callable[[], Awaitable[bool]], what: str, seconds: float = 10) -> None:
    """Wait until ``await check()`` is true."""
    deadline = time.monotonic() + seconds
    while not await check():
        assert time.monotonic() < deadline, f"{what} did not happen in {seconds} s"
        await asyncio.sleep(0.05)
