"""The run history on the dashboard, on Redis, SQLite and PostgreSQL: a type's page and a
task's page show their recent runs (a finished task's too, with the traceback of a
failure), and the cron page each schedule's last runs; nothing of a run is taken as HTML."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

import duetime
from duetime.web import create_app
from tests.helpers import eventually, running

ORIGIN = "http://127.0.0.1:8787"


@pytest.fixture
def url(any_store_url: str) -> str:
    return any_store_url


@pytest.fixture
async def app(url: str, namespace: str) -> AsyncIterator[duetime.App]:
    app = duetime.App(url, namespace=namespace)

    @app.task("mail", retries=1, backoff=duetime.Backoff.fixed(0.01))
    async def mail(payload: dict[str, Any], ctx: duetime.Context) -> None:
        if payload.get("fail") and ctx.attempt == 1:
            raise ValueError("<b>smtp</b> down")

    @app.task("report")
    async def report(payload: dict[str, Any]) -> None:
        pass

    yield app
    await app.close()


def client(web: object) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=web),  # type: ignore[arg-type]
        base_url=ORIGIN,
        follow_redirects=False,
    )


def run_rows(html: str) -> list[str]:
    table = html.split('<table class="runs">', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr data-outcome=.*?</tr>", table, flags=re.S)


async def runs_of(app: duetime.App, task_type: str, n: int) -> None:
    async def enough() -> bool:
        return len(await app.history(task_type)) >= n

    await eventually(enough, within=10, what=f"{n} runs of {task_type}")


async def test_the_type_and_task_pages_show_their_recent_runs(app: duetime.App) -> None:
    async with running(app):
        await app.schedule("mail", "m1", payload={"fail": True})
        await app.schedule("mail", "m2")
        await runs_of(app, "mail", 3)

    async with client(create_app(app)) as c:
        page = (await c.get("/types/mail")).text
        task = (await c.get("/task?" + urlencode({"type": "mail", "id": "m1"}))).text

    assert "<h2>Recent runs</h2>" in page
    rows = run_rows(page)
    assert len(rows) == 3
    assert sorted(re.search(r'data-outcome="(\w+)"', r).group(1) for r in rows) == [  # type: ignore[union-attr]
        "done",
        "done",
        "failed",
    ]
    assert '<a href="/task?type=mail&amp;id=m1">m1</a>' in page
    # The error is text, never markup.
    assert "&lt;b&gt;smtp&lt;/b&gt; down" in page and "<b>smtp</b>" not in page

    assert "it ran (its runs are below)" in task  # finished: not kept, but its runs are
    rows = run_rows(task)
    assert [re.search(r'data-outcome="(\w+)"', r).group(1) for r in rows] == ["done", "failed"]  # type: ignore[union-attr]
    assert "<summary>traceback</summary>" in rows[1] and "ValueError" in rows[1]


async def test_the_cron_page_shows_each_schedules_last_runs(app: duetime.App) -> None:
    await app.add_cron("hourly", "0 * * * *", task="report")
    await app.add_cron("daily", "0 0 * * *", task="report")
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    assert await app.backfill_cron("hourly", start=now - timedelta(hours=2), end=now) == 2
    async with running(app):
        await runs_of(app, "report", 2)

    async with client(create_app(app)) as c:
        html = (await c.get("/crons")).text

    hourly = html.split('<tr data-cron="hourly">', 1)[1].split("</tr>", 1)[0]
    shown = re.findall(r'<a class="outcome done" href="([^"]+)"', hourly)
    ticks = [int((now - timedelta(hours=h)).timestamp() * 1000) for h in (1, 2)]  # newest first
    assert shown == [
        "/task?" + urlencode({"type": "report", "id": f"hourly@{t}"}).replace("&", "&amp;")
        for t in ticks
    ]
    daily = html.split('<tr data-cron="daily">', 1)[1].split("</tr>", 1)[0]
    assert 'class="outcome' not in daily  # no run of its own
