"""The dashboard over HTTP, on Redis, SQLite and PostgreSQL: what each page shows, that
nothing from the store is taken as HTML, that ids travel encoded both ways, that thousands
of dead tasks page, and who may change what (the token, the origin, the host, read-only).
Requests go through the real Starlette app in this process (httpx's ASGI transport); the
browser tests drive the same pages in Chromium."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Iterator
from urllib.parse import quote, unquote_plus, urlencode

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

import duetime
from duetime.errors import ConfigError, UnknownTaskType, ValidationError
from duetime.stores.base import NewTask
from duetime.web import create_app
from duetime.web.guard import Access
from duetime.web.serve import access_for
from tests.helpers import file_bad_id, file_occurrence, make_dead, record_text
from tests.hostile import Raw, raw_for

ORIGIN = "http://127.0.0.1:8787"
TOKEN = "t0ken-for-tests"
ODD_ID = "a/b?c#d é"
#: What a browser sends with a form of the dashboard's own pages.
SAME = {"origin": ORIGIN}


@pytest.fixture
def url(any_store_url: str) -> str:
    return any_store_url


@pytest.fixture
async def app(url: str, namespace: str) -> AsyncIterator[duetime.App]:
    app = duetime.App(url, namespace=namespace)

    @app.task("mail", retries=0)
    async def mail(payload: object) -> None: ...

    app.declare("report")
    yield app
    await app.close()


def client(web: object, *, base: str = ORIGIN) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=web),  # type: ignore[arg-type]
        base_url=base,
        follow_redirects=False,
    )


@contextlib.asynccontextmanager
async def logged_in(web: object) -> AsyncIterator[httpx.AsyncClient]:
    async with client(web) as c:
        r = await c.get(f"/login?token={TOKEN}")
        assert r.status_code == 303 and "duetime_token" in c.cookies
        yield c


def rows(html: str, css_class: str = "tasks") -> list[str]:
    table = html.split(f'<table class="{css_class}">', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr>.*?</tr>", table.split("<tbody>", 1)[1], flags=re.S)


async def test_the_overview_shows_each_type_with_its_counts_and_the_workers(
    app: duetime.App,
) -> None:
    await app.schedule("mail", "m1", delay=60)
    await app.schedule("mail", "m2", delay=60)
    await make_dead(app, "report", 3)
    async with client(create_app(app, token=TOKEN)) as c:
        html = (await c.get("/")).text
    mail = html.split('<tr data-type="mail">', 1)[1].split("</tr>", 1)[0]
    assert re.search(r'class="n due"><a [^>]*>2</a>', mail)
    report = html.split('<tr data-type="report">', 1)[1].split("</tr>", 1)[0]
    assert re.search(r'class="n dead alert"><a [^>]*>3</a>', report)
    assert "No worker is running." in html
    assert "/static/htmx.min.js" in html and "hx-trigger=" in html  # refreshes by itself


async def test_a_dashboard_without_the_apps_code_finds_the_types_in_the_store(
    app: duetime.App, url: str, namespace: str
) -> None:
    await app.schedule("mail", ODD_ID, payload={"n": 1}, delay=60)
    bare = duetime.App(url, namespace=namespace)  # what `duetime dashboard --url` makes
    try:
        async with client(create_app(bare, token=TOKEN)) as c:
            assert '<tr data-type="mail">' in (await c.get("/")).text
            page = (await c.get("/types/mail")).text
            assert ODD_ID.replace("#", "#") in page
    finally:
        await bare.close()


async def test_payloads_and_errors_are_shown_as_text_never_as_html(app: duetime.App) -> None:
    await app.schedule("mail", "x", payload={"html": "<script>alert(1)</script>"}, delay=60)
    await make_dead(app, "report", 1, prefix="<img src=x onerror=alert(2)>")
    async with client(create_app(app, token=TOKEN)) as c:
        task = (await c.get("/task?" + urlencode({"type": "mail", "id": "x"}))).text
        dead = (await c.get("/types/report?state=dead")).text
    assert "<script>alert" not in task and "&lt;script&gt;alert(1)&lt;/script&gt;" in task
    assert "<img src=x" not in dead and "&lt;img src=x onerror=alert(2)&gt;" in dead


async def test_ids_travel_encoded_both_ways(app: duetime.App) -> None:
    await app.schedule("mail", ODD_ID, payload={"n": 1}, delay=60)
    await make_dead(app, "report", 1, prefix=ODD_ID)
    dead_id = ODD_ID + "0"
    async with logged_in(create_app(app, token=TOKEN)) as c:
        listing = (await c.get("/types/mail")).text
        link = re.search(r'<td class="id"><a href="([^"]+)">', listing)
        assert link is not None
        href = link.group(1).replace("&amp;", "&")
        assert href == "/task?" + urlencode({"type": "mail", "id": ODD_ID})
        page = (await c.get(href)).text
        assert f'<h1 class="id">{ODD_ID}</h1>' in page and "due" in page
        # The search box finds it too, and a percent-encoded path segment is no trouble.
        found = await c.get("/types/mail?" + urlencode({"id": ODD_ID}))
        assert found.status_code == 303 and found.headers["location"] == href
        # Retry of the dead one, its id in the action's query string.
        action = "/actions/retry?" + urlencode({"type": "report", "id": dead_id, "next": "/dead"})
        r = await c.post(action, headers={"origin": ORIGIN})
        assert r.status_code == 303 and r.headers["location"].startswith("/dead?")
    info = await app.get("report", dead_id)
    assert info is not None and info.state == "due"
    assert quote(ODD_ID, safe="") == "a%2Fb%3Fc%23d%20%C3%A9"  # what the test is about


@pytest.mark.timeout(120)
async def test_fifty_thousand_dead_tasks_page_fifty_at_a_time(app: duetime.App) -> None:
    await make_dead(app, "report", 50_000)
    async with client(create_app(app, token=TOKEN)) as c:
        first = (await c.get("/types/report?state=dead&page=1")).text
        last = (await c.get("/types/report?state=dead&page=1000")).text
        beyond = (await c.get("/types/report?state=dead&page=5000")).text
        dead = (await c.get("/dead")).text
    assert len(rows(first)) == 50 and "Page 1 of 1000" in first
    assert len(rows(last)) == 50 and "Page 1000 of 1000" in last and 'rel="next"' not in last
    assert "Page 1000 of 1000" in beyond  # a page past the end shows the last
    assert len(rows(dead)) == 10 and "all 50000" in dead  # the first few, and a link


async def test_retry_and_delete_one_or_all_dead_tasks(app: duetime.App) -> None:
    await make_dead(app, "report", 30)
    async with logged_in(create_app(app, token=TOKEN)) as c:
        assert (await c.post("/actions/retry?type=report&id=d0", headers=SAME)).status_code == 303
        assert (await c.post("/actions/delete?type=report&id=d1", headers=SAME)).status_code == 303
        missing = await c.post("/actions/delete?type=report&id=nope", headers=SAME)
        assert missing.status_code == 404
        assert (await app.counts("report")) == {"due": 1, "running": 0, "dead": 28}
        r = await c.post("/actions/retry-dead?type=report&next=/dead", headers=SAME)
        assert r.status_code == 303 and "28+dead+tasks+of+report+due+again" in r.headers["location"]
        await make_dead(app, "mail", 5)
        assert (await c.post("/actions/delete-dead?type=mail", headers=SAME)).status_code == 303
    assert await app.counts("report") == {"due": 29, "running": 0, "dead": 0}
    assert await app.counts("mail") == {"due": 0, "running": 0, "dead": 0}


async def test_a_running_task_has_an_abort_button_that_marks_its_run_to_abort(
    app: duetime.App,
) -> None:
    store = await app.open()
    now = await app.now_ms()
    await store.schedule("mail", [NewTask("m1", now, record_text())])
    await app.schedule("mail", "later", delay=3600)
    (claim,) = (
        await store.claim(
            "mail", now_ms=now, limit=1, lease_ms=60_000, max_stalls=3, at_most_once=False
        )
    ).claims
    async with logged_in(create_app(app, token=TOKEN)) as c:
        running_page = (await c.get("/task?type=mail&id=m1")).text
        due_page = (await c.get("/task?type=mail&id=later")).text
        assert 'name="abort"' in running_page and 'name="abort"' not in due_page
        r = await c.post("/actions/abort?type=mail&id=m1&next=/", headers=SAME)
        assert r.status_code == 303 and "m1+aborted" in r.headers["location"]
        assert await store.aborting("mail", [claim]) == [claim]  # its worker will find it
        r = await c.post("/actions/abort?type=mail&id=later", headers=SAME)
        assert r.status_code == 303 and "later+was+not+running" in r.headers["location"]
        assert await app.get("mail", "later") is None
        r = await c.post("/actions/abort?type=mail&id=later", headers=SAME)
        assert r.status_code == 404
        assert (await c.post("/actions/abort?type=mail&id=m1")).status_code == 403  # no origin


async def test_a_change_needs_the_token_and_the_dashboards_own_origin(app: duetime.App) -> None:
    await make_dead(app, "report", 1)
    action = "/actions/retry?type=report&id=d0"
    web = create_app(app, token=TOKEN)
    async with client(web) as anonymous:
        assert (await anonymous.post(action, headers={"origin": ORIGIN})).status_code == 401
        wrong = await anonymous.get("/login?token=guess")
        assert wrong.status_code == 401 and "duetime_token" not in anonymous.cookies
    async with logged_in(web) as c:
        for headers in (
            {"origin": "http://evil.example"},  # another site's form
            {"origin": "http://127.0.0.1:9999"},  # another port is another origin
            {"referer": "http://evil.example/page"},  # no Origin, a foreign Referer
            {},  # the cookie alone, from nowhere said
            {"origin": ORIGIN, "sec-fetch-site": "cross-site"},
        ):
            r = await c.post(action, headers=headers)
            assert r.status_code == 403, headers
        assert (await app.get("report", "d0")).state == "dead"  # type: ignore[union-attr]
    # A script with the token as a bearer, no cookie and no Origin, may.
    async with client(web) as script:
        r = await script.post(action, headers={"authorization": f"Bearer {TOKEN}"})
        assert r.status_code == 303
    assert (await app.get("report", "d0")).state == "due"  # type: ignore[union-attr]


async def test_read_only_refuses_every_change_and_shows_no_buttons(app: duetime.App) -> None:
    await make_dead(app, "report", 1)
    web = create_app(app, access=Access(token=TOKEN, read_only=True))
    async with logged_in(web) as c:
        page = (await c.get("/types/report?state=dead")).text
        r = await c.post("/actions/retry?type=report&id=d0", headers={"origin": ORIGIN})
    assert r.status_code == 403 and "read-only" in r.text
    assert "/actions/" not in page and "read-only" in page
    assert (await app.get("report", "d0")).state == "dead"  # type: ignore[union-attr]
    # Without a token at all, the dashboard is read-only.
    async with client(create_app(app)) as c:
        assert (await c.post("/actions/retry?type=report&id=d0")).status_code == 403


async def test_only_loopback_host_names_are_answered_on_loopback(app: duetime.App) -> None:
    web = create_app(app, token=TOKEN)
    async with client(web, base="http://localhost:8787") as c:
        assert (await c.get("/")).status_code == 200
    async with client(web, base="http://rebound.example:8787") as c:
        assert (await c.get("/")).status_code == 421  # a DNS name rebound to 127.0.0.1


async def test_beyond_loopback_a_token_is_required_and_reading_needs_it(app: duetime.App) -> None:
    with pytest.raises(ConfigError, match="without a token"):
        access_for("0.0.0.0", None, read_only=True)
    access, token = access_for("0.0.0.0", TOKEN, read_only=False)
    assert token == TOKEN and access.reads_need_token and not access.loopback_only
    web = create_app(app, access=access)
    async with client(web, base="http://10.1.2.3:8787") as c:
        assert (await c.get("/")).status_code == 401
        assert (await c.get("/static/htmx.min.js")).status_code == 200
        assert (await c.get(f"/login?token={TOKEN}")).status_code == 303
        assert (await c.get("/")).status_code == 200
    _, generated = access_for("127.0.0.1", None, read_only=False)
    assert generated and len(generated) >= 30  # made at start, to be printed


async def test_the_way_back_after_a_change_stays_on_the_dashboard(app: duetime.App) -> None:
    await make_dead(app, "report", 3)
    async with logged_in(create_app(app, token=TOKEN)) as c:
        for n, target in enumerate(("//evil.example/x", "https://evil.example", "\\\\evil")):
            r = await c.post(
                "/actions/retry?" + urlencode({"type": "report", "id": f"d{n}", "next": target}),
                headers={"origin": ORIGIN},
            )
            assert r.status_code == 303 and r.headers["location"].startswith("/?done="), target


async def test_mounted_under_a_prefix_in_another_starlette_app(app: duetime.App) -> None:
    await make_dead(app, "report", 1)
    service = Starlette(routes=[Mount("/ops/duetime", create_app(app, token=TOKEN))])
    async with client(service) as c:
        assert (await c.get(f"/ops/duetime/login?token={TOKEN}")).headers["location"] == (
            "/ops/duetime/"
        )
        html = (await c.get("/ops/duetime/")).text
        assert 'href="/ops/duetime/types/report?state=dead' in html
        assert 'src="/ops/duetime/static/htmx.min.js"' in html
        assert (await c.get("/ops/duetime/static/htmx.min.js")).status_code == 200
        r = await c.post(
            "/ops/duetime/actions/retry?type=report&id=d0&next=/dead", headers={"origin": ORIGIN}
        )
        assert r.status_code == 303 and r.headers["location"].startswith("/ops/duetime/dead?")
    assert (await app.get("report", "d0")).state == "due"  # type: ignore[union-attr]


async def test_cron_schedules_pause_and_resume(app: duetime.App) -> None:
    await app.add_cron("nightly", "0 3 * * *", task="mail")
    async with logged_in(create_app(app, token=TOKEN)) as c:
        page = (await c.get("/crons")).text
        assert '<tr data-cron="nightly">' in page and "0 3 * * *" in page
        assert (await c.post("/actions/pause-cron?name=nightly", headers=SAME)).status_code == 303
        (info,) = await app.crons()
        assert info.paused
        assert "Resume" in (await c.get("/crons")).text
        assert (await c.post("/actions/resume-cron?name=nightly", headers=SAME)).status_code == 303
        missing = await c.post("/actions/pause-cron?name=nope", headers=SAME)
        assert missing.status_code == 404
    (info,) = await app.crons()
    assert not info.paused


async def test_a_type_pauses_and_resumes_on_every_worker_from_its_page(app: duetime.App) -> None:
    await app.schedule("mail", "m1", delay=60)
    web = create_app(app, token=TOKEN)
    async with client(web) as anonymous:  # no session: no button, and no change
        assert 'name="pause-type"' not in (await anonymous.get("/types/mail")).text
        refused = await anonymous.post("/actions/pause-type?type=mail", headers=SAME)
        assert refused.status_code == 401 and await app.paused() == set()
    async with logged_in(web) as c:
        page = (await c.get("/types/mail")).text
        assert 'name="pause-type"' in page and 'class="paused"' not in page
        done = await c.post("/actions/pause-type?type=mail&next=/types/mail", headers=SAME)
        assert done.status_code == 303 and await app.paused() == {"mail"}
        page = (await c.get(done.headers["location"])).text
        assert "mail paused on every worker" in page
        assert 'class="paused"' in page and 'name="resume-type"' in page
        overview = (await c.get("/")).text
        row = overview.split('<tr data-type="mail">', 1)[1].split("</tr>", 1)[0]
        assert 'class="paused"' in row
        assert (await c.post("/actions/pause-type?type=nope", headers=SAME)).status_code == 404
        again = await c.post("/actions/resume-type?type=mail", headers=SAME)
        assert again.status_code == 303 and await app.paused() == set()
        assert 'class="paused"' not in (await c.get("/")).text


async def test_pollers_and_expiring_groups_have_their_pages(url: str, namespace: str) -> None:
    app = duetime.App(url, namespace=namespace)
    sessions = app.expiring("sessions", ttl=600)

    @sessions.on_expire
    async def expired(key: str, value: object) -> None: ...

    @app.poller("mailer", concurrency=2)
    async def mailer(ctx: duetime.PollContext) -> list[str]:
        return []

    @mailer.handler
    async def send(payload: object) -> None: ...

    try:
        await sessions.put("user/1", {"a": 1})
        await app.schedule("mailer", "i-1", delay=60)
        async with client(create_app(app, token=TOKEN)) as c:
            groups = (await c.get("/expiring")).text
            pollers = (await c.get("/pollers")).text
        assert 'data-group="sessions"' in groups and "user/1" in groups and "TTL 600" in groups
        assert ">mailer</a>" in pollers and "i-1" in pollers
    finally:
        await app.close()


async def test_the_dashboard_serves_store_gauges_for_prometheus(app: duetime.App) -> None:
    await make_dead(app, "report", 4)
    await app.schedule("mail", "m", delay=60)
    async with client(create_app(app, token=TOKEN)) as c:
        body = (await c.get("/metrics")).text
    assert 'duetime_store_tasks{state="dead",type="report"} 4.0' in body
    assert 'duetime_store_tasks{state="due",type="mail"} 1.0' in body


# -- reading never changes the App --------------------------------------------------------


@pytest.fixture
def raw(url: str, namespace: str) -> Iterator[Raw]:
    writer = raw_for(url, namespace)
    yield writer
    writer.close()


async def test_reading_any_type_name_never_declares_it_on_the_app(app: duetime.App) -> None:
    before = dict(app.types)
    names = ["sendWelcom", *(f"typo{n}" for n in range(40))]
    async with logged_in(create_app(app, token=TOKEN)) as c:
        for name in names:
            assert (await c.get(f"/types/{name}")).status_code == 404
            assert (await c.get("/types/" + name + "?state=dead&id=x")).status_code == 404
            page = await c.get("/task?" + urlencode({"type": name, "id": "x"}))
            assert page.status_code == 404 and "no task type" in page.text
            r = await c.post(f"/actions/retry-dead?type={name}", headers=SAME)
            assert r.status_code == 404
        overview = (await c.get("/")).text
        dead = (await c.get("/dead")).text
    assert app.types == before
    with pytest.raises(UnknownTaskType):
        await app.schedule("sendWelcom", "w1")
    assert "sendWelcom" not in overview and "typo" not in overview and "typo" not in dead


async def test_a_bare_apps_overview_lists_only_what_the_store_holds(
    app: duetime.App, url: str, namespace: str
) -> None:
    await app.schedule("mail", "m1", delay=60)
    bare = duetime.App(url, namespace=namespace)  # what `duetime dashboard --url` makes
    try:
        async with client(create_app(bare, token=TOKEN)) as c:
            for n in range(40):
                assert (await c.get(f"/types/typo{n}")).status_code == 404
            overview = (await c.get("/")).text
        assert '<tr data-type="mail">' in overview and "typo" not in overview
        assert not bare.types
    finally:
        await bare.close()


async def test_a_type_only_the_store_holds_is_read_and_changed_without_declaring_it(
    app: duetime.App, url: str, namespace: str
) -> None:
    other = duetime.App(url, namespace=namespace)  # another service on the same store
    other.declare("invoice", partitions=3)
    try:
        await make_dead(other, "invoice", 4)
    finally:
        await other.close()
    async with logged_in(create_app(app, token=TOKEN)) as c:
        assert '<tr data-type="invoice">' in (await c.get("/")).text
        listing = (await c.get("/types/invoice?state=dead")).text
        assert len(rows(listing)) == 4
        task = await c.get("/task?" + urlencode({"type": "invoice", "id": "d2"}))
        assert '<h1 class="id">d2</h1>' in task.text
        r = await c.post("/actions/retry?type=invoice&id=d0", headers=SAME)
        assert r.status_code == 303
        r = await c.post("/actions/delete-dead?type=invoice", headers=SAME)
        assert r.status_code == 303 and "3+dead+tasks+of+invoice+deleted" in r.headers["location"]
        metrics = (await c.get("/metrics")).text
    assert 'duetime_store_tasks{state="due",type="invoice"} 1.0' in metrics
    assert "invoice" not in app.types
    with pytest.raises(UnknownTaskType):
        await app.counts("invoice")


# -- bad data in the store stops nothing but itself -----------------------------------------


async def test_a_type_name_in_the_store_that_is_not_valid_is_skipped_and_named(
    app: duetime.App, raw: Raw, url: str, namespace: str
) -> None:
    await app.schedule("mail", "m1", delay=60)
    await make_dead(app, "report", 2)
    raw.add_due("bad type<x>", "b1", 4_102_444_800_000, '{"p":{}}')  # due in 2100
    bare = duetime.App(url, namespace=namespace)
    try:
        for seen_by in (app, bare):
            await _shows_the_good_types_and_names_the_bad_one(create_app(seen_by, token=TOKEN))
    finally:
        await bare.close()


async def _shows_the_good_types_and_names_the_bad_one(web: object) -> None:
    async with client(web) as c:
        overview = await c.get("/")
        dead = await c.get("/dead")
        metrics = await c.get("/metrics")
    assert overview.status_code == 200 and '<tr data-type="mail">' in overview.text
    assert "bad type&lt;x&gt;" in overview.text and "<x>" not in overview.text
    assert dead.status_code == 200 and 'data-type="report"' in dead.text
    assert "bad type&lt;x&gt;" in dead.text
    assert metrics.status_code == 200
    assert 'duetime_store_tasks{state="dead",type="report"} 2.0' in metrics.text
    assert "duetime_store_up 1.0" in metrics.text


# -- served under a service's own names ---------------------------------------------------


async def test_a_service_allows_its_own_host_names_and_still_refuses_others(
    app: duetime.App,
) -> None:
    await make_dead(app, "report", 1)
    web = create_app(
        app,
        token=TOKEN,
        allowed_hosts=["ops.example.com", "*.internal.example"],
        reads_need_token=False,
    )
    for host in (
        "ops.example.com",
        "OPS.Example.com:8443",
        "ops.example.com.",
        "a.internal.example",
        "b.c.internal.example:80",
        "localhost:8787",
        "127.0.0.1",
        "[::1]:8787",
    ):
        async with client(web, base=f"http://{host}") as c:
            assert (await c.get("/")).status_code == 200, host
    for host in (
        "rebound.example",  # a DNS name rebound to the service's address
        "internal.example",  # "*.internal.example" is the names under it only
        "evilinternal.example",
        "ops.example.com.evil.example",
        "10.0.0.5:8080",
    ):
        async with client(web, base=f"http://{host}") as c:
            assert (await c.get("/")).status_code == 421, host
    # A change through the allowed name, from the dashboard's own page there.
    own = "https://ops.example.com"
    async with client(web, base=own) as c:
        assert (await c.get(f"/login?token={TOKEN}")).status_code == 303
        r = await c.post("/actions/retry?type=report&id=d0", headers={"origin": own})
        assert r.status_code == 303
    assert (await app.get("report", "d0")).state == "due"  # type: ignore[union-attr]


def test_allowed_hosts_are_host_names_and_nothing_that_undoes_the_protection(
    app: duetime.App,
) -> None:
    for bad in (["*"], ["example.com:8443"], ["https://example.com"], ["a b"], [""], ["*.*.x"]):
        with pytest.raises(ValidationError, match="allowed_hosts"):
            create_app(app, token=TOKEN, allowed_hosts=bad)
    with pytest.raises(ValidationError, match="not a string"):
        create_app(app, token=TOKEN, allowed_hosts="ops.example.com")
    access, _ = access_for("127.0.0.1", TOKEN, False, ["Ops.Example.com", "[2001:db8::1]"])
    assert access.allowed_hosts == ("ops.example.com", "2001:db8::1")
    assert access.answers("[2001:db8::1]:8787") and not access.answers("[2001:db8::2]")


async def test_ipv6_loopback_is_answered_with_or_without_a_port(app: duetime.App) -> None:
    web = create_app(app, token=TOKEN)
    for host in ("[::1]", "[::1]:8787"):
        async with client(web, base=f"http://{host}") as c:
            assert (await c.get("/")).status_code == 200, host


async def test_mounted_the_login_cookie_goes_to_the_dashboard_only(app: duetime.App) -> None:
    service = Starlette(routes=[Mount("/ops/duetime", create_app(app, token=TOKEN))])
    async with client(service) as c:
        r = await c.get(f"/ops/duetime/login?token={TOKEN}")
    cookie = r.headers["set-cookie"]
    assert cookie.startswith("duetime_token=") and "Path=/ops/duetime;" in cookie + ";"
    async with client(create_app(app, token=TOKEN)) as c:
        assert "Path=/;" in (await c.get(f"/login?token={TOKEN}")).headers["set-cookie"] + ";"


async def test_a_link_cannot_make_the_dashboard_say_what_it_likes(app: duetime.App) -> None:
    await make_dead(app, "report", 1)
    spoof = "Your session expired: log in again at evil.example"
    async with logged_in(create_app(app, token=TOKEN)) as c:
        for query in (
            {"done": spoof},
            {"done": spoof, "sig": "0" * 64},
            {"done": spoof, "sig": "é"},
        ):
            page = await c.get("/?" + urlencode(query))
            assert (
                page.status_code == 200
                and spoof not in page.text
                and 'class="done"' not in page.text
            )
        r = await c.post("/actions/retry?type=report&id=d0&next=/dead", headers=SAME)
        back = r.headers["location"]
        assert (await c.get(back)).text.count("d0 is due again") == 1  # what the change did
        forged = back.replace("d0+is+due+again", "d1+is+due+again")
        assert "d1 is due again" not in (await c.get(forged)).text
    # Another process serving the same dashboard (same token) shows it too.
    async with logged_in(create_app(app, token=TOKEN)) as c:
        assert "d0 is due again" in (await c.get(back)).text
    async with client(create_app(app, token=TOKEN + "x")) as other:
        assert "d0 is due again" not in (await other.get(back)).text


async def test_retry_all_and_delete_all_act_on_every_id_and_name_those_they_cannot(
    app: duetime.App,
) -> None:
    """An occurrence id over 200 bytes is retried like any other; an id no call takes (one
    another program wrote) is named, and the others are still done."""
    long_id = await file_occurrence(app, "report", "é" * 100)
    await make_dead(app, "report", 3)
    await file_bad_id(app, "report", "bad\nid")
    async with logged_in(create_app(app, token=TOKEN)) as c:
        r = await c.post("/actions/retry-dead?type=report&next=/dead", headers=SAME)
        assert r.status_code == 303
        said = unquote_plus(r.headers["location"])
        assert "retried 4 tasks of report; 1 could not be: 'bad\\nid'" in said
        info = await app.get("report", long_id)
        assert info is not None and info.state == "due"
        assert await app.counts("report") == {"due": 5, "running": 0, "dead": 1}
        r = await c.post("/actions/delete-dead?type=report&next=/dead", headers=SAME)
        assert r.status_code == 303 and "could not be" in unquote_plus(r.headers["location"])
        one = await file_occurrence(app, "mail", "é" * 100)
        action = "/actions/delete?" + urlencode({"type": "mail", "id": one, "next": "/dead"})
        assert (await c.post(action, headers=SAME)).status_code == 303
    assert await app.get("mail", one) is None


async def test_the_trigger_button_runs_a_cron_schedule_once_now(app: duetime.App) -> None:
    await app.add_cron("nightly", "0 3 * * *", task="mail", payload={"k": 1})
    before = await app.next_runs("nightly", 2)
    async with logged_in(create_app(app, token=TOKEN)) as c:
        page = (await c.get("/crons")).text
        assert 'name="trigger-cron"' in page
        done = await c.post("/actions/trigger-cron?name=nightly&next=/crons", headers=SAME)
        assert done.status_code == 303
        assert "nightly%40" in done.headers["location"]  # the message names the run's task
        missing = await c.post("/actions/trigger-cron?name=nope", headers=SAME)
        assert missing.status_code == 404
    (run,) = [t for t in await app.list("mail") if t.task_id.startswith("nightly@")]
    assert run.payload == {"k": 1}
    assert await app.next_runs("nightly", 2) == before


async def test_the_task_page_shows_its_priority(app: duetime.App) -> None:
    await app.schedule("mail", "p", delay=60, priority=-7)
    async with client(create_app(app, token=TOKEN)) as c:
        page = (await c.get("/task?" + urlencode({"type": "mail", "id": "p"}))).text
    assert '<dt>priority</dt><dd class="priority">-7</dd>' in page


async def test_the_task_page_shows_its_group_escaped(app: duetime.App) -> None:
    await app.schedule("mail", "g", delay=60, group="<b>tenant</b>")
    await app.schedule("mail", "none", delay=60)
    async with client(create_app(app, token=TOKEN)) as c:
        page = (await c.get("/task?" + urlencode({"type": "mail", "id": "g"}))).text
        plain = (await c.get("/task?" + urlencode({"type": "mail", "id": "none"}))).text
    assert '<dt>group</dt><dd class="group">&lt;b&gt;tenant&lt;/b&gt;</dd>' in page
    assert "<dt>group</dt>" not in plain


async def test_a_dashboard_served_to_other_hosts_asks_for_its_token_to_read(
    app: duetime.App,
) -> None:
    await make_dead(app, "report", 1)
    web = create_app(app, token=TOKEN, allowed_hosts=["ops.example.com"])
    own = "https://ops.example.com"
    async with client(web, base=own) as c:
        page = await c.get("/task?type=report&id=d0")
        assert page.status_code == 401 and "Log in" in page.text  # a login page
        assert 'class="state"' not in page.text  # and nothing of the task
        assert (await c.get(f"/login?token={TOKEN}")).status_code == 303
        assert (await c.get("/task?type=report&id=d0")).status_code == 200
    async with client(web, base=own) as c:
        bearer = {"authorization": f"Bearer {TOKEN}"}
        assert (await c.get("/", headers=bearer)).status_code == 200
    # Loopback-only (the default), or told so, reads stay open.
    async with client(create_app(app, token=TOKEN)) as c:
        assert (await c.get("/")).status_code == 200
    opened = create_app(app, token=TOKEN, allowed_hosts=["ops.example.com"], reads_need_token=False)
    async with client(opened, base=own) as c:
        assert (await c.get("/")).status_code == 200
