"""The dashboard in a real headless Chromium (the system's, driven by Playwright), served by
uvicorn over a real store: what a user sees and clicks, checked in the store afterwards.
Also writes the screenshots of docs/dashboard.md and the README, ``docs/screenshots/*.png``.

The same pages over HTTP, without a browser, are tests/integration/test_dashboard.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.async_api import Browser, Page, expect

import duetime
from tests.browser.conftest import (
    BOTH_STORES,
    TOKEN,
    Dashboard,
    OtherOrigin,
    Watched,
    log_in,
    new_context,
    running_worker,
    wait_for,
)
from tests.helpers import make_dead

pytestmark = pytest.mark.asyncio(loop_scope="module")

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
ODD_ID = "a/b?c#d é"
SCRIPT = "<script>window.__pwned = 1</script>"
HTML_ERROR = '<img src=x onerror="window.__pwned = 2"><b>bold</b>'


async def state_of(app: duetime.App, task_type: str, task_id: str) -> str | None:
    info = await app.get(task_type, task_id)
    return None if info is None else info.state


@BOTH_STORES
async def test_the_overview_shows_a_scheduled_type_with_its_counts(
    app: duetime.App, dashboard: Dashboard, page: Page
) -> None:
    await app.schedule("mail", "m1", delay=60)
    await app.schedule("mail", "m2", delay=60)
    await make_dead(app, "invoice", 3)
    await page.goto(dashboard.url("/"))
    mail = page.locator('tr[data-type="mail"]')
    await expect(mail.locator("td.due")).to_have_text("2")
    await expect(mail.locator("td.running")).to_have_text("0")
    await expect(mail.locator("td.dead")).to_have_text("0")
    invoice = page.locator('tr[data-type="invoice"]')
    await expect(invoice.locator("td.due")).to_have_text("0")
    await expect(invoice.locator("td.dead")).to_have_text("3")
    await expect(invoice.locator("td.dead")).to_have_class("n dead alert")
    await expect(page.get_by_text("No worker is running.")).to_be_visible()
    await invoice.locator("td.dead a").click()  # the count opens the type's dead tasks
    await expect(page.locator("table.tasks tbody tr")).to_have_count(3)


@BOTH_STORES
async def test_a_dead_task_opened_from_the_dead_letters_is_retried(
    app: duetime.App, dashboard: Dashboard, page: Page
) -> None:
    await make_dead(app, "invoice", 2)
    await log_in(page, dashboard)
    await page.goto(dashboard.url("/dead"))
    section = page.locator('section.dead-type[data-type="invoice"]')
    await expect(section.locator("h2 .count")).to_have_text("2")
    await section.get_by_role("link", name="d0", exact=True).click()
    await expect(page.locator("h1.id")).to_have_text("d0")
    await expect(page.locator("dd.state")).to_have_text("dead")
    await expect(page.locator("pre.error")).to_contain_text("RuntimeError: refused")
    await page.get_by_role("button", name="Retry now").click()
    await expect(page.locator("p.done")).to_have_text("d0 is due again")
    await expect(page.locator("dd.state")).to_have_text("due")
    assert await state_of(app, "invoice", "d0") == "due"
    assert await state_of(app, "invoice", "d1") == "dead"
    assert (await app.counts("invoice"))["dead"] == 1


async def test_dead_letters_are_deleted_once_confirmed_and_retried_all_at_once(
    app: duetime.App, dashboard: Dashboard, page: Page, watched: Watched
) -> None:
    await make_dead(app, "invoice", 3)
    await make_dead(app, "sms", 2)
    await log_in(page, dashboard)
    await page.goto(dashboard.url("/dead"))
    invoice = page.locator('section.dead-type[data-type="invoice"]')
    row = invoice.locator("table.tasks tbody tr", has_text="d1")
    await row.get_by_role("button", name="Delete").click()
    await expect(page.locator("p.done")).to_have_text("d1 deleted")
    assert watched.dialogs == ["Delete d1?"]
    assert await app.get("invoice", "d1") is None
    await invoice.get_by_role("button", name="Retry all").click()
    await expect(page.locator("p.done")).to_have_text("2 dead tasks of invoice due again")
    assert await app.counts("invoice") == {"due": 2, "running": 0, "dead": 0}
    await (
        page.locator('section.dead-type[data-type="sms"]')
        .get_by_role("button", name="Delete all")
        .click()
    )
    await expect(page.get_by_text("No dead task.")).to_be_visible()
    assert watched.dialogs[1:] == [
        "Run every dead task of invoice again now?",
        "Delete every dead task of sms?",
    ]
    assert await app.counts("sms") == {"due": 0, "running": 0, "dead": 0}


async def test_a_cron_schedule_is_paused_and_resumed(
    app: duetime.App, dashboard: Dashboard, page: Page
) -> None:
    await app.add_cron("nightly", "0 3 * * *", task="report")
    await log_in(page, dashboard)
    await page.goto(dashboard.url("/crons"))
    row = page.locator('tr[data-cron="nightly"]')
    await expect(row.locator("td.state")).to_have_text("active")
    await row.get_by_role("button", name="Pause").click()
    await expect(page.locator("p.done")).to_have_text("cron schedule nightly paused")
    await expect(row.locator("td.state")).to_have_text("paused")
    (info,) = await app.crons()
    assert info.name == "nightly" and info.paused
    await row.get_by_role("button", name="Resume").click()
    await expect(row.locator("td.state")).to_have_text("active")
    (info,) = await app.crons()
    assert not info.paused


async def test_a_task_type_is_paused_and_resumed_on_every_worker(
    app: duetime.App, dashboard: Dashboard, page: Page, watched: Watched
) -> None:
    await app.schedule("mail", "m1", delay=60)
    await log_in(page, dashboard)
    await page.goto(dashboard.url("/types/mail"))
    await page.get_by_role("button", name="Pause").click()
    await expect(page.locator("p.done")).to_have_text("mail paused on every worker")
    assert watched.dialogs == ["Stop every worker starting mail tasks until it is resumed?"]
    await expect(page.locator("h1 .paused")).to_have_text("paused")
    assert await app.paused() == {"mail"}
    await page.goto(dashboard.url("/"))
    await expect(page.locator('tr[data-type="mail"] .paused')).to_have_text("paused")
    await page.goto(dashboard.url("/types/mail"))
    await page.get_by_role("button", name="Resume").click()
    await expect(page.locator("p.done")).to_have_text("mail resumed")
    await expect(page.locator("h1 .paused")).to_have_count(0)
    assert await app.paused() == set()


async def test_the_trigger_button_runs_a_cron_schedule_once_now_after_a_confirm(
    app: duetime.App, dashboard: Dashboard, page: Page, watched: Watched
) -> None:
    await app.add_cron("nightly", "0 3 * * *", task="report")
    before = await app.next_runs("nightly", 2)
    await log_in(page, dashboard)
    await page.goto(dashboard.url("/crons"))
    row = page.locator('tr[data-cron="nightly"]')
    await row.get_by_role("button", name="Trigger").click()
    await expect(page.locator("p.done")).to_contain_text("cron schedule nightly runs now, as")
    assert watched.dialogs[-1] == "Run nightly once now?"
    (run,) = [t for t in await app.list("report") if t.task_id.startswith("nightly@")]
    assert run.state == "due"
    assert await app.next_runs("nightly", 2) == before
    await expect(row.locator("td.state")).to_have_text("active")


async def test_a_change_without_the_token_or_from_another_origin_changes_nothing(
    app: duetime.App, dashboard: Dashboard, page: Page, browser: Browser, watched: Watched
) -> None:
    await make_dead(app, "invoice", 1)
    await app.add_cron("nightly", "0 3 * * *", task="report")
    retry_url = dashboard.url("/actions/retry?type=invoice&id=d0&next=/dead")

    # A browser that never logged in: no button to press, and a script's POSTs are refused.
    stranger = await new_context(browser, watched)
    try:
        anonymous = await stranger.new_page()
        await anonymous.goto(dashboard.url("/types/invoice?state=dead"))
        await expect(anonymous.get_by_role("button", name="Log in")).to_be_visible()
        await expect(anonymous.get_by_role("button", name="Retry", exact=True)).to_have_count(0)
        for url in (retry_url, dashboard.url("/actions/pause-cron?name=nightly")):
            status = await anonymous.evaluate(
                "url => fetch(url, {method: 'POST'}).then(r => r.status)", url
            )
            assert status == 401
    finally:
        await stranger.close()
    assert await state_of(app, "invoice", "d0") == "dead"
    assert not (await app.crons())[0].paused

    # A logged-in browser on a page of another origin, which posts to the dashboard.
    await log_in(page, dashboard)
    attack = f"""<!doctype html><body>
      <form id="f" method="post" action="{retry_url}"></form>
      <script>
        fetch("{dashboard.url("/actions/pause-cron?name=nightly")}",
              {{method: "POST", mode: "no-cors", credentials: "include"}})
          .finally(() => document.getElementById("f").submit());
      </script></body>"""
    with OtherOrigin(attack) as other:
        async with page.expect_response(lambda r: "/actions/retry" in r.url) as answer:
            await page.goto(other.base + "/")
        refused = await answer.value
    assert refused.status == 403
    assert "another site" in await refused.text()
    assert await state_of(app, "invoice", "d0") == "dead"
    assert not (await app.crons())[0].paused

    # The same browser, from the dashboard's own page, may: the cookie was there.
    await page.goto(dashboard.url("/types/invoice?state=dead"))
    await page.get_by_role("button", name="Retry", exact=True).click()
    await expect(page.locator("p.done")).to_have_text("d0 is due again")
    assert await state_of(app, "invoice", "d0") == "due"


async def test_a_page_without_a_session_offers_the_login_form_instead_of_its_buttons(
    app: duetime.App, dashboard: Dashboard, page: Page
) -> None:
    await make_dead(app, "invoice", 1)
    await page.goto(dashboard.url("/types/invoice?state=dead"))
    await expect(page.get_by_role("button", name="Retry", exact=True)).to_have_count(0)

    await page.get_by_label("token").fill("guess")  # a wrong token: the form again
    await page.get_by_role("button", name="Log in").click()
    await expect(page.locator("p.note")).to_have_text("wrong token")
    assert not await page.context.cookies()

    await page.get_by_label("token").fill(TOKEN)  # the right one: back to the same page
    await page.get_by_role("button", name="Log in").click()
    await expect(page.get_by_role("button", name="Retry", exact=True)).to_be_visible()
    assert urlsplit(page.url).path == "/types/invoice"
    await expect(page.get_by_role("button", name="Log in")).to_have_count(0)
    await page.get_by_role("button", name="Retry", exact=True).click()
    await expect(page.locator("p.done")).to_have_text("d0 is due again")
    assert await state_of(app, "invoice", "d0") == "due"


async def test_ids_with_reserved_and_non_ascii_characters_travel_both_ways(
    app: duetime.App, dashboard: Dashboard, page: Page
) -> None:
    await app.schedule("mail", ODD_ID, payload={"n": 1}, delay=60)
    await make_dead(app, "invoice", 1, prefix=ODD_ID)
    dead_id = ODD_ID + "0"
    await log_in(page, dashboard)

    await page.goto(dashboard.url("/types/mail"))
    await page.get_by_role("link", name=ODD_ID, exact=True).click()
    await expect(page.locator("h1.id")).to_have_text(ODD_ID)
    assert parse_qs(urlsplit(page.url).query) == {"type": ["mail"], "id": [ODD_ID]}
    await expect(page.locator("pre.payload")).to_contain_text('"n": 1')

    await page.goto(dashboard.url("/types/mail"))  # the search box finds it too
    await page.get_by_label("Task id").fill(ODD_ID)
    await page.get_by_role("button", name="Open").click()
    await expect(page.locator("h1.id")).to_have_text(ODD_ID)
    await expect(page.locator("dd.state")).to_have_text("due")

    await page.goto(dashboard.url("/types/invoice?state=dead"))
    await page.get_by_role("link", name=dead_id, exact=True).click()
    await expect(page.locator("h1.id")).to_have_text(dead_id)
    await expect(page.locator("dd.state")).to_have_text("dead")
    await page.get_by_role("button", name="Retry now").click()
    await expect(page.locator("p.done")).to_have_text(f"{dead_id} is due again")
    assert await state_of(app, "invoice", dead_id) == "due"


async def test_payloads_and_errors_show_as_text_never_as_html(
    app: duetime.App, dashboard: Dashboard, page: Page
) -> None:
    await app.schedule("mail", "x", payload={"html": SCRIPT}, delay=60)
    await app.schedule("report", "r", payload={"error": HTML_ERROR})
    async with running_worker(app, ["report"]):
        await wait_for(lambda: _is_dead(app, "report", "r"), "the report dying")

    await page.goto(dashboard.url("/task?type=mail&id=x"))
    await expect(page.locator("pre.payload")).to_contain_text(SCRIPT)
    for path in ("/task?type=report&id=r", "/types/report?state=dead", "/dead"):
        await page.goto(dashboard.url(path))
        await expect(page.locator("main")).to_contain_text(HTML_ERROR)
        assert await page.locator("main img, main b, main script").count() == 0
        assert await page.evaluate("typeof window.__pwned") == "undefined"
    await page.goto(dashboard.url("/task?type=mail&id=x"))
    await page.wait_for_load_state("load")
    assert await page.evaluate("typeof window.__pwned") == "undefined"


async def _is_dead(app: duetime.App, task_type: str, task_id: str) -> bool:
    return await state_of(app, task_type, task_id) == "dead"


async def test_the_overview_refreshes_by_itself(
    app: duetime.App, dashboard: Dashboard, page: Page
) -> None:
    await app.schedule("mail", "m1", delay=60)
    await page.goto(dashboard.url("/"))
    due = page.locator('tr[data-type="mail"] td.due')
    await expect(due).to_have_text("1")
    await page.evaluate("window.__same_page = true")
    await app.schedule("mail", "m2", delay=60)
    await expect(due).to_have_text("2", timeout=6_000)  # htmx polls every 2 s
    await make_dead(app, "invoice", 1)  # a type new to the store shows up too
    await expect(page.locator('tr[data-type="invoice"] td.dead')).to_have_text("1", timeout=12_000)
    assert await page.evaluate("window.__same_page") is True  # never reloaded


async def test_screenshots_of_the_overview_and_the_dead_letters(
    app: duetime.App, dashboard: Dashboard, page: Page
) -> None:
    errors = ["SMTP 421: mailbox busy", "ValueError: no template 'weekly'", "timed out after 30 s"]
    for k in range(40):
        await app.schedule("mail", f"welcome-{k}", payload={"user": k})
    for k in range(9):
        await app.schedule("report", f"report-{k}", payload={"error": errors[k % 3]})
    for k in range(12):
        await app.schedule("sms", f"sms-{k}", delay=300 + k)
    await app.schedule("video", "intro.mp4")
    await app.schedule("video", "launch.mp4")
    await make_dead(app, "invoice", 3, prefix="INV-2024-")
    await log_in(page, dashboard)  # the pages as an operator sees them: with their buttons
    # A worker that stays: the live workers, and two videos running now (its heartbeat
    # says so within a beat, while the other worker runs the mail and the reports).
    async with running_worker(app, ["video"]):
        async with running_worker(app, ["mail", "report"]):
            await wait_for(lambda: _none_due(app, "mail", "report"), "the mail and reports")
        await wait_for(lambda: _beat_running(app, "video", 2), "the heartbeat of the videos")
        await page.goto(dashboard.url("/"))
        await expect(page.locator('tr[data-type="mail"] td:nth-child(5)')).to_have_text("40")
        await expect(page.locator('tr[data-type="report"] td.dead')).to_have_text("9")
        await expect(page.locator('tr[data-type="video"] td.running')).to_have_text("2")
        await expect(page.locator("table.workers tbody tr")).to_contain_text("video: 2")
        await expect(page.locator('.chart[data-drawn="1"]')).to_have_count(2)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=SCREENSHOTS / "overview.png")
    await page.goto(dashboard.url("/dead"))
    await expect(page.locator("section.dead-type")).to_have_count(2)
    await page.screenshot(path=SCREENSHOTS / "dead-letters.png")
    for name in ("overview.png", "dead-letters.png"):
        assert (SCREENSHOTS / name).stat().st_size > 10_000


async def _none_due(app: duetime.App, *types: str) -> bool:
    counts = await asyncio.gather(*(app.counts(t) for t in types))
    return all(c["due"] == 0 and c["running"] == 0 for c in counts)


async def _beat_running(app: duetime.App, task_type: str, n: int) -> bool:
    return [dict(w.running) for w in await app.workers()] == [{task_type: n}]
