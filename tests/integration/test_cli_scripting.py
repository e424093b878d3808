"""The duetime command for scripts and operators: --json, a store URL without the app's
code, exit codes, and the bulk commands with thousands of dead tasks."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import duetime
from duetime.admin.bulk import BATCH
from duetime.cli import main
from duetime.cli.output import PROGRESS_FROM
from duetime.stores.capabilities import TELEMETRY, use
from duetime.stores.telemetry import minute_of
from tests.helpers import eventually, make_dead, running
from tests.hostile import raw_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["redis", "sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param in ("redis", "postgres"):
        url: str = request.getfixturevalue(f"{request.param}_url")
        return url
    (tmp_path / "duetime.db").touch()  # an empty file (a read does not create one)
    return f"sqlite:///{tmp_path / 'duetime.db'}"


@pytest.fixture
def env(store_url: str, namespace: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """DUETIME_URL and DUETIME_NAMESPACE set, no app module anywhere."""
    monkeypatch.setenv("DUETIME_URL", store_url)
    monkeypatch.setenv("DUETIME_NAMESPACE", namespace)
    monkeypatch.delenv("DUETIME_APP", raising=False)
    return {"url": store_url, "namespace": namespace}


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["--log-level", "WARNING", *args])


def ok(*args: str) -> str:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return result.stdout


def as_json(*args: str) -> object:
    return json.loads(ok(*args, "--json"))  # one document, nothing else on stdout


async def seed(url: str, namespace: str, dead: int = 0) -> None:
    """Tasks a producer with the code wrote: a partitioned type and some dead letters."""
    app = duetime.App(url, namespace=namespace)
    app.declare("mail")
    app.declare("split", partitions=3)
    try:
        await app.schedule_many(
            duetime.Task("split", f"s{n}", delay=timedelta(hours=1)) for n in range(9)
        )
        await make_dead(app, "mail", dead)
    finally:
        await app.close()


def test_every_command_works_from_a_url_on_any_type(env: dict[str, str]) -> None:
    asyncio.run(seed(env["url"], env["namespace"], dead=2))

    sched = as_json("schedule", "report", "r1", "--at", "2031-01-02T03:04:05+00:00")
    assert sched == {
        "type": "report",
        "id": "r1",
        "due": "2031-01-02T03:04:05.000+00:00",
        "due_ms": 1925089445000,
    }
    new = as_json("submit", "report", "--delay", "60", "--payload", '{"a": 1}')
    assert isinstance(new, dict) and len(new["id"]) == 12
    stats = as_json("stats")
    assert isinstance(stats, list)
    assert all(row.pop("recent")["fired"] == 0 for row in stats)  # no worker ran
    assert stats == [
        {"type": "mail", "due": 0, "running": 0, "dead": 2, "paused": False},
        {"type": "report", "due": 2, "running": 0, "dead": 0, "paused": False},
        {"type": "split", "due": 9, "running": 0, "dead": 0, "paused": False},
    ]
    listed = as_json("ls")
    assert isinstance(listed, list) and len(listed) == 11
    assert {t["type"] for t in listed} == {"report", "split"}
    shown = as_json("show", "split", "s4")
    assert isinstance(shown, dict) and shown["state"] == "due" and shown["due_ms"] > 0
    dead = as_json("ls", "mail", "--state", "dead")
    assert isinstance(dead, list) and [t["id"] for t in dead] == ["d0", "d1"]
    assert dead[0]["error"] == "RuntimeError: refused"
    again = as_json("retry", "mail", "d0")
    assert isinstance(again, dict) and again["id"] == "d0" and again["due_ms"] > 0
    assert as_json("cancel", "split", "s4") == {"type": "split", "id": "s4", "cancelled": True}
    assert as_json("cron") == []
    text = ok("stats")
    assert "split\t8\t0\t0" in text and "mail\t1\t0\t1" in text


async def test_abort_says_what_it_did_and_exits_3_when_there_is_no_task(
    env: dict[str, str],
) -> None:
    app = duetime.App(env["url"], namespace=env["namespace"])
    started = asyncio.Event()
    cleaned: list[str] = []

    @app.task("slow")
    async def slow(payload: dict[str, object], ctx: duetime.Context) -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cleaned.append(ctx.task_id)
            raise

    await app.schedule("slow", "s1")
    await app.schedule("slow", "later", delay=timedelta(hours=1))
    try:
        async with running(app):  # the command has no handler: it learns the type from the store
            await asyncio.wait_for(started.wait(), 10)
            out = await asyncio.to_thread(ok, "abort", "slow", "s1")
            assert out == "aborted slow/s1: its worker cancels the running handler\n"
            await eventually(lambda: cleaned == ["s1"], 2, "the handler is cancelled")
            doc = json.loads(await asyncio.to_thread(ok, "abort", "slow", "later", "--json"))
            assert doc == {"type": "slow", "id": "later", "status": "cancelled"}
            result = await asyncio.to_thread(invoke, "abort", "slow", "later")
            assert result.exit_code == 3 and "no task slow/later" in result.output
    finally:
        await app.close()


def test_exit_codes(env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ok("schedule", "mail", "m1", "--delay", "60")
    for args in (
        ["show", "mail", "nope"],
        ["cancel", "mail", "nope"],
        ["retry", "mail", "m1"],  # not dead
        ["cron", "noSuchSchedule"],
    ):
        result = invoke(*args, "--json")
        assert result.exit_code == 3, (args, result.output)
        assert result.stdout == "" and "no " in result.stderr
    for args in (
        ["ls", "--limit", "0"],
        ["ls", "bad:type"],  # a first argument with a colon is a module
        ["schedule", "mail", "x", "--payload", "[1]"],
        ["ls", "no-such-type!"],
        ["cancel", "mail", "--all"],
        ["cancel", "mail", "m1", "--all", "--state", "due"],
        ["cancel", "mail", "m1", "--state", "due"],
        ["retry", "mail"],
        ["ls", "--url", "ftp://nowhere"],
        ["stats", "--url", env["url"], "--app", "x:app"],
    ):
        result = invoke(*args)
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output
    monkeypatch.delenv("DUETIME_URL")
    result = invoke("stats")
    assert result.exit_code == 2 and "--url" in result.stderr
    result = invoke("stats", "--url", "redis://127.0.0.1:1/0")
    assert result.exit_code == 1 and "unavailable" in result.stderr.lower()


# Over two pages of the bulk commands' listing (BATCH, 200) and a part page: what 3,000
# dead tasks showed, in a sixth of the writes (3,000 took a minute on PostgreSQL, loaded).
@pytest.mark.parametrize("count", [2 * BATCH + 50])
def test_bulk_commands_over_several_pages_of_dead_tasks(env: dict[str, str], count: int) -> None:
    asyncio.run(seed(env["url"], env["namespace"], dead=count))

    assert ok("retry", "mail", "--all") == f"retried {count} dead mail tasks\n"
    rows = as_json("stats")
    assert isinstance(rows, list)
    row = rows[0]
    assert {k: row[k] for k in ("type", "due", "running", "dead")} == {
        "type": "mail",
        "due": count,
        "running": 0,
        "dead": 0,
    }
    asyncio.run(seed(env["url"], env["namespace"], dead=count))  # the same ids, dead again
    done = as_json("cancel", "mail", "--all", "--state", "dead")
    assert done == {"type": "mail", "state": "dead", "action": "cancel", "count": count}
    assert as_json("cancel", "split", "--all", "--state", "due")["count"] == 9  # type: ignore[index]
    assert as_json("stats") == []
    assert ok("retry", "mail", "--all") == "retried 0 dead mail tasks\n"


@pytest.mark.parametrize("store_url", ["redis"], indirect=True)  # the bar, not the store
def test_a_progress_bar_on_a_terminal_only(env: dict[str, str], tmp_path: Path) -> None:
    count = PROGRESS_FROM + 200  # a bar from PROGRESS_FROM tasks on (it was 5,000)
    asyncio.run(seed(env["url"], env["namespace"], dead=count))
    command = [sys.executable, "-m", "duetime.cli", "retry", "mail", "--all"]
    environ = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "100"}
    leader, follower = pty.openpty()
    proc = subprocess.Popen(command, stdout=follower, stderr=subprocess.PIPE, env=environ)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the follower side closed: the command ended
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    _, errors = proc.communicate(timeout=60)
    assert proc.returncode == 0, errors
    assert b"retry mail (dead)" in seen and f"/{count}".encode() in seen  # the bar, drawn
    assert seen.rstrip().endswith(f"retried {count} dead mail tasks".encode())

    asyncio.run(seed(env["url"], env["namespace"], dead=count))
    piped = subprocess.run(command, capture_output=True, env=environ, check=True)
    assert piped.stdout == f"retried {count} dead mail tasks\n".encode()


def test_numeric_options_refuse_what_is_not_a_finite_number_in_range(
    env: dict[str, str],
) -> None:
    for args in (
        ["schedule", "mail", "x", "--every", "inf"],
        ["schedule", "mail", "x", "--every", "1e300"],
        ["schedule", "mail", "x", "--every", "nan"],
        ["submit", "mail", "--every", "-inf"],
        ["schedule", "mail", "x", "--delay", "nan"],
        ["schedule", "mail", "x", "--delay", "1e300"],
        ["submit", "mail", "--delay", "inf"],
        ["schedule", "mail", "x", "--every", "60", "--delay", "1e20"],
        ["ls", "--limit", str(2**64)],
        ["ls", "mail", "--limit", str(2**64)],
        ["cron", "--next", str(10**12)],
        ["worker", "nowhere:app", "--grace", "nan"],
        ["worker", "nowhere:app", "--grace", "-1"],
    ):
        result = invoke(*args)
        option = next(a for a in reversed(args) if a.startswith("--"))
        assert result.exit_code == 2, (args, result.output)
        assert f"'{option}'" in result.stderr and "Traceback" not in result.output, args
    for args in (["--at", "2031-13-01T00:00:00Z"], ["--until", "soon"], ["--payload", "{x"]):
        result = invoke("schedule", "mail", "x", *args)
        assert result.exit_code == 2 and args[0] in result.stderr, (args, result.output)
    assert as_json("stats") == []  # nothing was written


async def plant_bad_type(url: str, namespace: str) -> None:
    """Good tasks, and one under a name that is not a valid type name, written behind
    duetime's back (by another program, or an older version)."""
    await seed(url, namespace, dead=2)
    writer = raw_for(url, namespace)
    try:
        writer.add_due("bad type<x>", "b1", 4_102_444_800_000, '{"p":{}}')  # due in 2100
    finally:
        writer.close()


def test_a_type_name_in_the_store_that_is_not_valid_is_skipped_with_a_warning(
    env: dict[str, str],
) -> None:
    asyncio.run(plant_bad_type(env["url"], env["namespace"]))
    for args in (["stats"], ["stats", "--json"], ["ls"], ["ls", "--json"]):
        result = invoke(*args)
        assert result.exit_code == 0, (args, result.output)
        assert "bad type" not in result.stdout and "split" in result.stdout, args
        (warning,) = result.stderr.splitlines()
        assert "'bad type<x>'" in warning and "not a valid type name" in warning, args
    rows = as_json("stats")
    assert isinstance(rows, list) and [row["type"] for row in rows] == ["mail", "split"]


APP_MODULE = """
import os, duetime
app = duetime.App(os.environ["DUETIME_URL"], namespace=os.environ["DUETIME_NAMESPACE"])

@app.task("mail")
async def mail(payload):
    pass
"""


async def history_of_a_type_the_app_no_longer_has(url: str, namespace: str) -> None:
    """Dead tasks, and the last hour's counts, of ``oldMail``: what a worker of the app's
    previous version left (a rename), or of another app on the same store."""
    app = duetime.App(url, namespace=namespace)
    app.declare("oldMail")
    try:
        await make_dead(app, "oldMail", 2)
        now = await app.now_ms()
        store = await app.open()
        counts = {(minute_of(now), "oldMail", "fired"): 5}
        await use(store, TELEMETRY).telemetry.add_counts(counts, now)
    finally:
        await app.close()


def test_stats_of_an_app_shows_the_types_of_the_history_it_does_not_have(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "renamedapp.py").write_text(APP_MODULE)
    monkeypatch.chdir(tmp_path)
    sys.modules.pop("renamedapp", None)
    asyncio.run(history_of_a_type_the_app_no_longer_has(env["url"], env["namespace"]))
    rows = as_json("stats", "renamedapp:app")
    assert isinstance(rows, list)
    assert [(r["type"], r["dead"], r["recent"]["fired"]) for r in rows] == [
        ("mail", 0, 0),
        ("oldMail", 2, 5),
    ]
    assert "oldMail\t0\t0\t2\t5" in ok("stats", "renamedapp:app")
    # Shown, not adopted: the app still refuses the type (a typo, for the app).
    result = invoke("schedule", "renamedapp:app", "oldMail", "x")
    assert result.exit_code == 2 and "unknown task type" in result.stderr
