"""``duetime history`` (the runs of a type or a task, text and JSON), ``show`` of a finished
task pointing to them, and ``duetime cron backfill`` (the ticks of a past range, once)."""

from __future__ import annotations

import asyncio
import json
import shlex
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import duetime
from duetime.cli import main
from tests.helpers import eventually, running


@pytest.fixture(params=["redis", "sqlite"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "redis":
        redis_url: str = request.getfixturevalue("redis_url")
        return redis_url
    return f"sqlite:///{tmp_path / 'duetime.db'}"


def invoke(url: str, namespace: str, *args: str) -> Result:
    return CliRunner().invoke(
        main, ["--log-level", "WARNING", *args, "--url", url, "--namespace", namespace]
    )


def ok(url: str, namespace: str, *args: str) -> str:
    result = invoke(url, namespace, *args)
    assert result.exit_code == 0, result.output
    return result.stdout


async def ran_mail(url: str, namespace: str) -> str:
    """Run m1 (fails once, then succeeds) and m2 (done) with a worker; its id."""
    app = duetime.App(url, namespace=namespace)

    @app.task("mail", retries=1, backoff=duetime.Backoff.fixed(0.01))
    async def mail(payload: dict[str, Any], ctx: duetime.Context) -> None:
        if ctx.task_id == "m1" and ctx.attempt == 1:
            raise ValueError("smtp down")

    try:
        async with running(app) as worker:
            await app.schedule("mail", "m1")
            await app.schedule("mail", "m2")

            async def three() -> bool:
                return len(await app.history("mail")) == 3

            await eventually(three, what="three runs")
        return worker.id
    finally:
        await app.close()


def test_history_lists_a_types_runs_and_one_tasks_with_its_tracebacks(
    url: str, namespace: str
) -> None:
    worker = asyncio.run(ran_mail(url, namespace))

    lines = ok(url, namespace, "history", "mail").splitlines()
    assert lines[0] == "finished\tid\toccurrence\tattempt\toutcome\tduration\tworker\terror"
    rows = sorted(line.split("\t")[1:5] + line.split("\t")[6:] for line in lines[1:])
    assert [r[0] for r in rows] == ["m1", "m1", "m2"]
    assert [(r[2], r[3]) for r in rows] == [("1", "failed"), ("2", "done"), ("1", "done")]
    assert {r[4] for r in rows} == {worker}
    assert sorted(r[5] for r in rows) == ["-", "-", "ValueError: smtp down"]

    docs = json.loads(ok(url, namespace, "history", "mail", "m1", "--json"))
    assert [(d["id"], d["attempt"], d["outcome"]) for d in docs] == [
        ("m1", 2, "done"),
        ("m1", 1, "failed"),
    ]
    failed = docs[1]
    assert failed["error"] == "ValueError: smtp down" and "smtp down" in failed["traceback"]
    assert failed["occurrence_id"] == f"m1@{failed['occurrence_ms']}"
    assert failed["started_ms"] <= failed["finished_ms"] and failed["duration_ms"] >= 0
    assert failed["finished"].endswith("Z") or failed["finished"].endswith("+00:00")

    text = ok(url, namespace, "history", "mail", "m1")
    assert "traceback of attempt 1" in text and "ValueError: smtp down" in text
    assert len(ok(url, namespace, "history", "mail", "--limit", "1").splitlines()) == 2

    shown = invoke(url, namespace, "show", "mail", "m1")
    assert shown.exit_code == 3
    suggested = f"duetime history --url {shlex.quote(url)} --namespace {namespace} mail m1"
    assert f"a finished task is not kept; its runs are: {suggested})" in shown.stderr

    empty = invoke(url, namespace, "history", "mail", "never")
    assert empty.exit_code == 0 and "no runs of mail/never kept" in empty.stderr


async def add_schedule(url: str, namespace: str) -> None:
    app = duetime.App(url, namespace=namespace)
    app.declare("report")
    try:
        await app.add_cron("hourly", "0 * * * *", task="report")
    finally:
        await app.close()


def test_cron_backfill_schedules_the_ticks_of_a_range_once(url: str, namespace: str) -> None:
    asyncio.run(add_schedule(url, namespace))
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    start, end = (now - timedelta(hours=5)).isoformat(), now.isoformat()

    assert ok(url, namespace, "cron", "backfill", "hourly", "--from", start, "--to", end) == (
        "hourly: 5 ticks scheduled\n"
    )
    doc = json.loads(
        ok(url, namespace, "cron", "backfill", "hourly", "--from", start, "--to", end, "--json")
    )
    assert doc["scheduled"] == 0 and doc["name"] == "hourly" and doc["to"].startswith(end[:19])
    listed = json.loads(ok(url, namespace, "ls", "report", "--json"))
    ticks = [int((now - timedelta(hours=h)).timestamp() * 1000) for h in range(5, 0, -1)]
    # Oldest first, due now (before the schedule's own task, due at its next tick).
    assert [t["id"] for t in listed] == [*(f"hourly@{t}" for t in ticks), "hourly"]
    # The schedules' listing is still `duetime cron`, with a name or not.
    assert json.loads(ok(url, namespace, "cron", "--json"))[0]["name"] == "hourly"
    assert json.loads(ok(url, namespace, "cron", "hourly", "--json"))[0]["name"] == "hourly"

    reversed_ = invoke(url, namespace, "cron", "backfill", "hourly", "--from", end, "--to", start)
    assert reversed_.exit_code == 2
    assert "Invalid value for '--to': must be after start" in reversed_.stderr
    long_ago = (now - timedelta(days=10_001 / 24)).isoformat()
    too_long = invoke(url, namespace, "cron", "backfill", "hourly", "--from", long_ago, "--to", end)
    assert too_long.exit_code == 2
    assert "Invalid value for '--to': the range holds more than 10,000 ticks" in too_long.stderr
    missing = invoke(url, namespace, "cron", "backfill", "nope", "--from", start, "--to", end)
    assert missing.exit_code == 3
