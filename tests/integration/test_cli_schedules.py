"""The commands on a task's coming runs and on cron schedules: ``run-now``, ``cron trigger``,
and ``cron`` listing bounds and finished schedules."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import duetime
from duetime.cli import main

APP_MODULE = """
import os, duetime
from datetime import datetime, timezone
app = duetime.App(os.environ["CLI_TEST_URL"], namespace=os.environ["CLI_TEST_NS"])

@app.task("mail")
async def mail(payload, ctx):
    pass

@app.cron("0 9 * * MON", name="weekly", tz="Europe/Madrid", limit=3,
          start=datetime(2031, 1, 1, tzinfo=timezone.utc))
async def weekly(ctx):
    pass

@app.cron("@daily", name="trigger")
async def named_like_a_command(ctx):
    pass
"""


@pytest.fixture
def cli_env(tmp_path: Path, redis_url: str, namespace: str, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "schedapp.py").write_text(APP_MODULE)
    monkeypatch.setenv("CLI_TEST_URL", redis_url)
    monkeypatch.setenv("CLI_TEST_NS", namespace)
    monkeypatch.chdir(tmp_path)
    sys.modules.pop("schedapp", None)
    return redis_url


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["--log-level", "WARNING", *args])


def run(*args: str) -> str:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_run_now_brings_the_next_occurrence_forward(cli_env: str) -> None:
    run("schedule", "schedapp:app", "mail", "m1", "--at", "2031-01-06T09:00:00Z", "--every", "1d")
    before = time.time() * 1000
    shown = json.loads(run("run-now", "schedapp:app", "mail", "m1", "--json"))
    assert shown["id"] == "m1" and before - 5000 < shown["due_ms"] <= time.time() * 1000 + 5000
    task = json.loads(run("show", "schedapp:app", "mail", "m1"))
    assert task["due_ms"] == shown["due_ms"] and task["every_s"] == 86400.0
    assert "mail/m1 due " in run("run-now", "schedapp:app", "mail", "m1")  # due already
    missing = invoke("run-now", "schedapp:app", "mail", "nosuch")
    assert missing.exit_code == 3 and "no task mail/nosuch" in missing.output


def test_cron_trigger_runs_a_schedule_once_now_and_the_listing_still_reads_names(
    cli_env: str, namespace: str
) -> None:
    # The listing, as before: with the app first, and with options before the name.
    listed = run("cron", "schedapp:app", "weekly")
    assert "weekly\tweekly\t0 9 * * MON (Europe/Madrid)" in listed
    assert "limit=3" in listed and "start=2031-01-01T01:00:00+01:00" in listed
    as_json = json.loads(run("cron", "--json", "schedapp:app", "--next", "5", "weekly"))
    assert len(as_json[0]["next"]) == 3 and as_json[0]["limit"] == 3
    # A schedule named like a command is listed with `cron list`.
    assert "trigger\ttrigger\t0 0 * * *" in run("cron", "list", "schedapp:app", "trigger")

    task_id = run("cron", "trigger", "schedapp:app", "weekly").strip()
    assert task_id.startswith("weekly@")
    shown = json.loads(run("show", "schedapp:app", "weekly", task_id))
    assert shown["state"] == "due"
    # On the store alone (which knows the schedules a worker wrote), options first.
    asyncio.run(write_declared())
    doc = json.loads(
        run("cron", "--url", cli_env, "--namespace", namespace, "trigger", "trigger", "--json")
    )
    assert doc["name"] == "trigger" and doc["id"].startswith("trigger@")
    missing = invoke("cron", "trigger", "schedapp:app", "nosuch")
    assert missing.exit_code == 3 and "no cron schedule named 'nosuch'" in missing.output


async def write_declared() -> None:
    """What a worker of the test's app writes as it starts: its cron schedules."""
    import schedapp  # type: ignore[import-not-found]

    app: duetime.App = schedapp.app
    try:
        await app.worker(monitored=False).write_declared()
    finally:
        await app.close()


def test_cron_help_lists_its_commands() -> None:
    out = run("cron", "--help")
    assert "trigger" in out and "list" in out


def test_every_calendar_keeps_the_wall_clock_time_in_its_zone(cli_env: str) -> None:
    first = "2031-03-29T09:00:00+01:00"  # Madrid, the day before summer time
    run(
        "schedule", "schedapp:app", "mail", "weekly-mail", "--at", first,
        "--every-calendar", "1w", "--tz", "Europe/Madrid", "--group", "tenant-7",
    )  # fmt: skip
    task = json.loads(run("show", "schedapp:app", "mail", "weekly-mail"))
    assert task["every_calendar"] == {
        "days": 0, "weeks": 1, "months": 0, "years": 0, "tz": "Europe/Madrid"
    }  # fmt: skip
    assert task["group"] == "tenant-7"
    app = duetime.App(os.environ["CLI_TEST_URL"], namespace=os.environ["CLI_TEST_NS"])
    app.declare("mail")
    _, following = asyncio.run(_next_two(app))
    assert following.astimezone(UTC).isoformat() == "2031-04-05T07:00:00+00:00"  # 09:00, UTC+2
    monthly = json.loads(
        run("submit", "schedapp:app", "mail", "--every-calendar", "1y6mo", "--json")
    )
    shown = json.loads(run("show", "schedapp:app", "mail", monthly["id"]))
    assert shown["every_calendar"]["months"] == 6 and shown["every_calendar"]["years"] == 1
    for bad, hint in (
        (["--every-calendar", "7x"], "--every-calendar"),
        (["--every-calendar", "1d1mo"], "--every-calendar"),
        (["--every-calendar", "1d", "--tz", "Mars/Olympus"], "--tz"),
        (["--every", "60", "--every-calendar", "1d"], "--every or --every-calendar"),
    ):
        refused = invoke("schedule", "schedapp:app", "mail", "bad", *bad)
        assert refused.exit_code == 2 and hint in refused.output, refused.output
    assert invoke("show", "schedapp:app", "mail", "bad").exit_code == 3


async def _next_two(app: duetime.App) -> list[datetime]:
    try:
        return await app.next_occurrences("mail", "weekly-mail", 2)
    finally:
        await app.close()


def test_show_prints_the_metadata_scheduled_with_meta(cli_env: str) -> None:
    run("schedule", "schedapp:app", "mail", "with-meta", "--delay", "1h", "--meta", '{"t": "t7"}')
    assert json.loads(run("show", "schedapp:app", "mail", "with-meta"))["meta"] == {"t": "t7"}
    run("schedule", "schedapp:app", "mail", "without", "--delay", "1h")
    assert json.loads(run("show", "schedapp:app", "mail", "without"))["meta"] == {}
    refused = invoke(
        "schedule", "schedapp:app", "mail", "big", "--meta", '{"k": "%s"}' % ("x" * 5000)
    )
    assert refused.exit_code != 0 and "meta" in refused.output
