"""Logging in to the dashboard over HTTP: a page seen without a session offers the login
form where its buttons would be, the form posts the token and goes back to the page, a
wrong token gets the form again, and beyond loopback a page asked for without the token is
the form. Through the real Starlette app (httpx's ASGI transport), on SQLite; the browser
test of the same form is in tests/browser/test_dashboard.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

import duetime
from duetime.web import create_app
from duetime.web.guard import Access
from duetime.web.serve import access_for
from tests.helpers import make_dead
from tests.integration.test_dashboard import ORIGIN, SAME, TOKEN, client, logged_in

FORM = {"content-type": "application/x-www-form-urlencoded"}


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[duetime.App]:
    app = duetime.App(f"sqlite:///{tmp_path / 'duetime.db'}")
    app.declare("report")
    await make_dead(app, "report", 1)
    yield app
    await app.close()


async def test_a_page_without_a_session_offers_the_login_form_and_no_buttons(
    app: duetime.App,
) -> None:
    web = create_app(app, token=TOKEN)
    async with client(web) as anonymous:
        page = (await anonymous.get("/types/report?state=dead")).text
    assert "/actions/" not in page
    assert 'name="token"' in page and "Log in to retry, delete or pause" in page
    assert 'action="/login?next=%2Ftypes%2Freport%3Fstate%3Ddead"' in page
    async with logged_in(web) as c:
        page = (await c.get("/types/report?state=dead")).text
    assert "/actions/retry?" in page and 'name="token"' not in page
    # Read-only, or without a token at all: nothing to log in for.
    for read_only in (create_app(app, access=Access(token=TOKEN, read_only=True)), create_app(app)):
        async with client(read_only) as c:
            page = (await c.get("/types/report?state=dead")).text
        assert "/actions/" not in page and 'name="token"' not in page


async def test_the_form_posts_the_token_and_goes_back_to_the_page(app: duetime.App) -> None:
    web = create_app(app, token=TOKEN)
    login = "/login?" + urlencode({"next": "/types/report?state=dead"})
    async with client(web) as c:
        wrong = await c.post(login, content="token=guess", headers={**SAME, **FORM})
        assert wrong.status_code == 401 and "wrong token" in wrong.text
        assert 'name="token"' in wrong.text and "duetime_token" not in c.cookies
        right = await c.post(login, content=urlencode({"token": TOKEN}), headers={**SAME, **FORM})
        assert right.status_code == 303 and right.headers["location"] == (
            "/types/report?state=dead"
        )
        assert "duetime_token" in c.cookies
        r = await c.post("/actions/retry?type=report&id=d0", headers=SAME)
        assert r.status_code == 303
    assert (await app.get("report", "d0")).state == "due"  # type: ignore[union-attr]
    async with client(web) as c:
        # From another site's page: refused, no cookie; a next elsewhere: the overview.
        foreign = {"origin": "http://evil.example", **FORM}
        r = await c.post("/login", content=f"token={TOKEN}", headers=foreign)
        assert r.status_code == 403 and "duetime_token" not in c.cookies
        away = "/login?" + urlencode({"next": "//evil.example/x"})
        r = await c.post(away, content=f"token={TOKEN}", headers={**SAME, **FORM})
        assert r.status_code == 303 and r.headers["location"] == "/"
        page = await c.get("/login")  # no token given: the form
        assert page.status_code == 200 and 'name="token"' in page.text


async def test_beyond_loopback_a_page_without_the_token_is_the_login_form(
    app: duetime.App,
) -> None:
    access, _ = access_for("0.0.0.0", TOKEN, read_only=True)
    web = create_app(app, access=access)
    async with client(web, base="http://10.1.2.3:8787") as c:
        r = await c.get("/dead")
        assert r.status_code == 401 and 'name="token"' in r.text
        assert 'action="/login?next=%2Fdead"' in r.text
        own = {"origin": "http://10.1.2.3:8787", **FORM}
        r = await c.post("/login?next=/dead", content=f"token={TOKEN}", headers=own)
        assert r.status_code == 303 and r.headers["location"] == "/dead"
        assert (await c.get("/dead")).status_code == 200  # read-only, and read


async def test_mounted_under_a_prefix_the_form_stays_under_it(app: duetime.App) -> None:
    service = Starlette(routes=[Mount("/ops/duetime", create_app(app, token=TOKEN))])
    async with client(service) as c:
        page = (await c.get("/ops/duetime/dead")).text
        assert 'action="/ops/duetime/login?next=%2Fdead"' in page
        r = await c.post(
            "/ops/duetime/login?next=/dead",
            content=f"token={TOKEN}",
            headers={"origin": ORIGIN, **FORM},
        )
        assert r.status_code == 303 and r.headers["location"] == "/ops/duetime/dead"
