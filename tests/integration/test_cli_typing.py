"""The duetime command as people type it: durations and times in the forms people write,
errors that name their option, ``--version``, ``--log-level`` after the command, clear
``MODULE:APP`` mistakes, ``ls --state all`` and empty listings, a task that is not there,
and the warning when no worker ran on the store (the worker on another SQLite file)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import duetime
from duetime.cli import main
from tests.helpers import make_dead

ROOT = Path(__file__).resolve().parents[2]

APP_MODULE = """
import os, duetime
app = duetime.App(os.environ["DUETIME_URL"], namespace=os.environ["DUETIME_NAMESPACE"])
answer = 42

@app.task("mail")
async def mail(payload):
    pass
"""


@pytest.fixture(params=["redis", "sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest) -> str:
    if request.param in ("redis", "postgres"):
        url: str = request.getfixturevalue(f"{request.param}_url")
        return url
    return "sqlite:///duetime.db"  # relative, as a newcomer writes it: the test's directory


@pytest.fixture
def env(
    store_url: str, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """A directory holding the app module (``typedapp``), as the working directory; the
    store in DUETIME_URL and DUETIME_NAMESPACE."""
    (tmp_path / "typedapp.py").write_text(APP_MODULE)
    if store_url.startswith("sqlite:"):
        (tmp_path / "duetime.db").touch()  # an empty file, as a worker would have made
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DUETIME_URL", store_url)
    monkeypatch.setenv("DUETIME_NAMESPACE", namespace)
    monkeypatch.delenv("DUETIME_APP", raising=False)
    sys.modules.pop("typedapp", None)
    return {"url": store_url, "namespace": namespace}


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["--log-level", "WARNING", *args])


def ok(*args: str) -> str:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return result.stdout


def shown(*args: str) -> dict[str, object]:
    doc: dict[str, object] = json.loads(ok("show", *args, "--json"))
    return doc


def command(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command in a process of its own (for what it logs)."""
    return subprocess.run(
        [sys.executable, "-m", "duetime.cli", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_durations_take_units_and_iso_8601(env: dict[str, str]) -> None:
    for delay, seconds in (("90", 90), ("90s", 90), ("5m", 300), ("2h", 7200), ("1d", 86400)):
        before = time.time() * 1000
        ok("schedule", "mail", f"d{delay}", "--delay", delay)
        due_ms = shown("mail", f"d{delay}")["due_ms"]
        assert isinstance(due_ms, int)
        assert before + seconds * 1000 - 5000 < due_ms < time.time() * 1000 + seconds * 1000
    ok("schedule", "mail", "p", "--delay", "PT5M", "--every", "1h30m")
    assert shown("mail", "p")["every_s"] == 5400.0
    ok("schedule", "mail", "iso", "--every", "P1DT2H")
    assert shown("mail", "iso")["every_s"] == 93600.0


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_every_bad_value_names_its_option_and_says_what_is_taken(env: dict[str, str]) -> None:
    cases = {
        ("--delay", "5x"): "is not a duration: give seconds (90), 90s, 5m",
        ("--every", "P1M"): "years and months have no fixed length",
        ("--every", "-5m"): "must be positive",  # refused by the App, named here
        ("--at", "2030-01-02T09:00:00"): "has no time zone: add Z or +00:00",
        ("--until", "2030-01-02"): "has no time zone: add Z or +00:00",
        ("--at", "tomorrow"): "is not an ISO 8601 time, e.g. 2030-01-02T09:00:00Z",
        ("--payload", '{"a": 1,,}'): "invalid JSON at char 8",
        ("--payload", "[1]"): "must be a JSON object",
    }
    for (option, value), said in cases.items():
        result = invoke("schedule", "mail", "x", option, value)
        assert result.exit_code == 2, (option, value, result.output)
        assert f"'{option}'" in result.stderr and said in result.stderr, result.stderr
    result = invoke("worker", "typedapp:app", "--grace", "soon")
    assert result.exit_code == 2 and "'--grace'" in result.stderr
    assert (
        ok("ls", "--state", "all") == "type\tid\tstate\tdue\tattempts\tpriority\terror\n"
    )  # none made
    ok(
        "schedule",
        "mail",
        "z",
        "--at",
        "2030-01-02T09:00:00z",
        "--every",
        "1d",
        "--until",
        "2031-01-02T00:00Z",
    )
    doc = shown("mail", "z")
    assert (doc["due"], doc["until"]) == (
        "2030-01-02T09:00:00.000+00:00",
        "2031-01-02T00:00:00.000+00:00",
    )


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_version_and_log_level_after_the_command(env: dict[str, str], tmp_path: Path) -> None:
    assert ok("--version") == f"duetime {duetime.__version__}\n"
    after = command("ls", "mail", "--log-level", "debug", cwd=tmp_path)
    assert after.returncode == 0, after.stderr
    assert " DEBUG " in after.stderr
    # Given after the command, it wins over the one before it.
    quiet = command(
        "--log-level", "debug", "ls", "mail", "--json", "--log-level", "error", cwd=tmp_path
    )
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_module_app_mistakes_say_what_is_wrong_and_what_to_give(env: dict[str, str]) -> None:
    cases = {
        "typedapp:nope": "module 'typedapp' has no attribute 'nope'; its duetime.App: app",
        "typedapp:answer": "'typedapp:answer' is an int, not a duetime.App",
        "typedapp.py:app": "is a file path: give the module name, typedapp:app",
        "../typedapp:app": "give the module name, typedapp:app, and run duetime from .. or "
        "set PYTHONPATH=..",
        "./typedapp.py:app": "give the module name, typedapp:app",
        "nosuchmodule:app": "no module 'nosuchmodule' in",
    }
    for target, said in cases.items():
        for args in (["ls", target], ["worker", target]):
            result = invoke(*args)
            assert result.exit_code == 2, (args, result.output)
            assert said in result.stderr, (args, result.stderr)
            assert isinstance(result.exception, SystemExit), result.exception  # no traceback


def test_ls_all_states_and_empty_listings(env: dict[str, str]) -> None:
    header = "type\tid\tstate\tdue\tattempts\tpriority\terror"
    empty = invoke("ls", "mail")
    assert empty.exit_code == 0 and empty.stdout == header + "\n"
    assert empty.stderr == "no due tasks of mail\n"
    assert ok("ls", "--json") == "[]\n"
    ok("schedule", "mail", "m1", "--delay", "1h")

    async def kill_one() -> None:
        app = duetime.App(env["url"], namespace=env["namespace"])
        app.declare("mail")
        try:
            await make_dead(app, "mail", 1)
        finally:
            await app.close()

    asyncio.run(kill_one())
    lines = ok("ls", "--state", "all").splitlines()
    assert lines[0] == header
    assert [line.split("\t")[1:3] for line in lines[1:]] == [["m1", "due"], ["d0", "dead"]]
    assert lines[2].endswith("\t0\tRuntimeError: refused")
    rows = json.loads(ok("ls", "mail", "--state", "all", "--json"))
    assert [(r["id"], r["state"]) for r in rows] == [("m1", "due"), ("d0", "dead")]
    assert ok("ls", "mail", "--state", "running") == header + "\n"


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_show_of_a_task_that_is_not_there_says_finished_tasks_are_not_kept(
    env: dict[str, str],
) -> None:
    for args in (["show", "mail", "gone"], ["cancel", "mail", "gone"]):
        result = invoke(*args)
        assert result.exit_code == 3, result.output
        assert result.stderr == (
            "Error: no task mail/gone: not due, running or dead (a finished task is not kept; "
            "its runs are: duetime history mail gone)\n"
        )


async def run_a_worker(url: str, namespace: str, task_type: str = "mail") -> None:
    """A worker of the app running ``task_type`` only, that starts and stops (as one does
    when restarted)."""
    app = duetime.App(url, namespace=namespace)

    @app.task("mail")
    async def mail(payload: object) -> None: ...

    @app.task("other")
    async def other(payload: object) -> None: ...

    worker = app.worker([task_type])
    run = asyncio.create_task(worker.run())
    try:
        await asyncio.wait_for(worker.started.wait(), 10)
    finally:
        worker.stop()
        await asyncio.wait_for(run, 15)
        await app.close()


def test_schedule_warns_when_no_worker_ran_on_the_store_in_the_last_minute(
    env: dict[str, str], tmp_path: Path
) -> None:
    where = env["url"].replace("sqlite:///", f"sqlite:///{tmp_path}/")  # absolute
    warning = (
        f"warning: no worker of mail has run on {where} (namespace {env['namespace']}) in the "
        "last minute: is one running on this store?\n"
    )
    for args in (["schedule", "mail", "m1"], ["submit", "mail", "--json"]):
        result = invoke(*args)
        assert result.exit_code == 0, result.output
        assert result.stderr == warning
    assert len(json.loads(ok("ls", "--json"))) == 2  # warned, and done
    # A worker of other types only (duetime worker app --type other) runs no mail.
    asyncio.run(run_a_worker(env["url"], env["namespace"], "other"))
    result = invoke("schedule", "mail", "m0")
    assert result.exit_code == 0 and result.stderr == warning, result.output
    asyncio.run(run_a_worker(env["url"], env["namespace"]))  # started, and stopped
    for args in (["schedule", "mail", "m2"], ["submit", "mail"]):
        result = invoke(*args)
        assert result.exit_code == 0 and result.stderr == "", result.output


def test_schedule_with_a_priority_shows_it_and_refuses_a_bad_one(env: dict[str, str]) -> None:
    ok("schedule", "mail", "p1", "--delay", "1h", "--priority", "12")
    assert shown("mail", "p1")["priority"] == 12
    listed = ok("ls", "mail").splitlines()
    assert listed[1].split("\t")[1:6:4] == ["p1", "12"]
    bad = invoke("schedule", "mail", "p2", "--priority", "101")
    assert bad.exit_code != 0 and "priority" in bad.output
    assert invoke("show", "mail", "p2").exit_code == 3  # nothing written
