"""A FastAPI endpoint tested under duetime's harness, the ways docs/testing.md shows: httpx's
ASGITransport in the test's event loop (no lifespan: the harness runs the due tasks), and
Starlette's TestClient (in an event loop of its own); and why ``lifespan(worker=True)`` is
not entered under the harness: its worker races the harness for what is due."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

import duetime
from duetime.asgi import lifespan
from duetime.testing import harness
from tests.helpers import eventually


def make_web(worker: bool) -> tuple[duetime.App, FastAPI, list[Any]]:
    app = duetime.App()  # no store of its own is ever opened under the harness
    sent: list[Any] = []

    @app.task("mail")
    async def mail(payload: dict[str, str]) -> None:
        sent.append(payload["to"])

    web = FastAPI(lifespan=lifespan(app, worker=worker))

    @web.post("/signup")
    async def signup(email: str) -> dict[str, bool]:
        await app.schedule("mail", email, payload={"to": email}, delay=60)
        return {"ok": True}

    return app, web, sent


async def test_an_endpoint_called_through_httpx_asgi_transport_under_the_harness() -> None:
    app, web, sent = make_web(worker=True)  # ASGITransport runs no lifespan: no worker
    async with harness(app) as h:
        transport = httpx.ASGITransport(app=web)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            answer = await client.post("/signup", params={"email": "ana@example.com"})
        assert answer.status_code == 200
        assert [t.state for t in await h.due("mail")] == []  # due in a minute, not now
        h.advance(timedelta(minutes=1))
        assert [run.task_id for run in await h.run_due()] == ["ana@example.com"]
        assert sent == ["ana@example.com"]


@pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")
async def test_an_endpoint_called_through_starlette_testclient_under_the_harness() -> None:
    from starlette.testclient import TestClient

    app, web, sent = make_web(worker=False)

    def call() -> int:
        # ``with`` runs the lifespan (worker=False: the store only), in TestClient's own
        # event loop, on the harness's store.
        with TestClient(web) as client:
            return int(client.post("/signup", params={"email": "bo@example.com"}).status_code)

    async with harness(app) as h:
        assert await asyncio.to_thread(call) == 200  # blocking: off the test's loop
        h.advance(timedelta(minutes=1))
        assert [run.task_id for run in await h.run_due()] == ["bo@example.com"]
        assert sent == ["bo@example.com"]


async def test_a_lifespan_worker_entered_under_the_harness_races_it_for_due_tasks() -> None:
    """Safe, but not deterministic: a worker runs on the harness's store and clock, and
    starts a task the moment it is due, before ``h.run_due()`` is called."""
    app, web, sent = make_web(worker=True)
    async with harness(app) as h, web.router.lifespan_context(web):
        await app.schedule("mail", "now", payload={"to": "now"})  # due at once
        await eventually(lambda: sent == ["now"], within=30, what="the lifespan's worker")
        assert await h.run_due() == []  # nothing left for the harness
