"""A handler's failure as someone debugging it finds it, on Redis, SQLite and PostgreSQL: the
traceback of the attempt that sent the task to the dead letters, in ``duetime show`` (text
and ``--json``) and on the dashboard's task page, shown as text, never as HTML."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import timedelta
from urllib.parse import urlencode

import httpx
import pytest
from click.testing import CliRunner

import duetime
from duetime.cli import main
from duetime.web import create_app
from tests.helpers import eventually, has_state, running

TASK_ID = "inv<1>"
MESSAGE = "<b>refund</b> & 'amount' -5 is negative"


def _charge(amount: int) -> None:
    if amount < 0:
        raise ValueError(f"<b>refund</b> & 'amount' {amount} is negative")


@pytest.fixture
async def app(any_store_url: str, namespace: str) -> AsyncIterator[duetime.App]:
    app = duetime.App(any_store_url, namespace=namespace)

    @app.task("invoice", retries=1, backoff=duetime.Backoff(base=timedelta(milliseconds=10)))
    async def invoice(payload: dict[str, int]) -> None:
        _charge(payload["amount"])

    async with running(app):
        await app.schedule("invoice", TASK_ID, payload={"amount": -5})
        await eventually(lambda: has_state(app, "invoice", TASK_ID, "dead"))
    yield app
    await app.close()


def show(app: duetime.App, *options: str, task_id: str = TASK_ID) -> str:
    """``duetime show invoice <task_id>`` on the app's store, as a user types it."""
    result = CliRunner().invoke(
        main,
        ["--log-level", "WARNING", "show", "invoice", task_id, *options]
        + ["--url", app.url, "--namespace", app.namespace],
    )
    assert result.exit_code == 0, result.output
    return result.stdout


async def test_a_failures_traceback_reaches_show_json_and_the_dashboard(
    app: duetime.App,
) -> None:
    info = await app.get("invoice", TASK_ID)
    assert info is not None and info.traceback is not None
    trace = info.traceback
    assert "in invoice\n" in trace and "in _charge\n" in trace
    assert trace.endswith(f"ValueError: {MESSAGE}\n")

    # `show --json`: one document, the traceback a field of it.
    doc = json.loads(await asyncio.to_thread(show, app, "--json"))
    assert (doc["state"], doc["error"], doc["traceback"]) == (
        "dead",
        f"ValueError: {MESSAGE}",
        trace,
    )

    # `show` for people: the document, then the traceback as its own lines.
    text = await asyncio.to_thread(show, app)
    document, _, lines = text.partition("traceback of the last failed attempt:\n")
    assert json.loads(document)["error"] == f"ValueError: {MESSAGE}"
    assert "traceback" not in json.loads(document)
    assert lines == trace

    # The dashboard's task page: the traceback as text, escaped.
    web = create_app(app, token="t0ken")
    transport = httpx.ASGITransport(app=web)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8787") as c:
        page = await c.get("/task?" + urlencode({"type": "invoice", "id": TASK_ID}))
    assert page.status_code == 200
    html = page.text
    shown = html.split('<pre class="traceback">', 1)[1].split("</pre>", 1)[0]
    assert shown.startswith("Traceback (most recent call last):\n")
    assert "in _charge\n" in shown
    assert shown.rstrip().endswith(
        "ValueError: &lt;b&gt;refund&lt;/b&gt; &amp; &#39;amount&#39; -5 is negative"
    )
    assert "<b>refund" not in html


async def test_a_task_that_never_failed_shows_no_traceback(app: duetime.App) -> None:
    await app.schedule("invoice", "fine", payload={"amount": 5}, delay=3600)
    doc = json.loads(await asyncio.to_thread(show, app, "--json", task_id="fine"))
    assert doc["traceback"] is None
    web = create_app(app, token="t0ken")
    transport = httpx.ASGITransport(app=web)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8787") as c:
        page = await c.get("/task?" + urlencode({"type": "invoice", "id": "fine"}))
    assert page.status_code == 200 and 'class="traceback"' not in page.text
