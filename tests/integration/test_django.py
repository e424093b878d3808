"""duetime in a Django project: the example project under examples/django_project, its
views through Django's test client (``manage.py test``), and ``manage.py duetime ...``
run as a user runs it, in processes of their own, on a SQLite file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import duetime

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "examples" / "django_project"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment of the project's commands: its store is a SQLite file of the test's."""
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "DUETIME_URL": f"sqlite:///{tmp_path / 'duetime.db'}",
    }


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def worker(env: dict[str, str], tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """``manage.py duetime worker`` running; stopped with SIGTERM (then killed) at the end."""
    log = (tmp_path / "worker.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "duetime", "worker", "--grace", "5"],
        cwd=PROJECT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        log.close()


def test_the_views_pass_their_tests_with_djangos_test_client(env: dict[str, str]) -> None:
    done = manage(env, "test", "mysite")
    assert done.returncode == 0, done.stderr
    assert "Ran 3 tests" in done.stderr and "OK" in done.stderr


def test_manage_py_duetime_schedules_lists_and_runs_on_the_projects_app(
    env: dict[str, str], worker: subprocess.Popen[str], tmp_path: Path
) -> None:
    payload = json.dumps({"email": "ana@example.com"})
    done = manage(
        env, "duetime", "schedule", "welcome", "ana", "--payload", payload, "--delay", "4"
    )  # long enough to be listed by the next command (a Django process start) under load
    assert done.returncode == 0, done.stderr
    listed = manage(env, "duetime", "ls", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [(t["type"], t["id"], t["payload"]) for t in json.loads(listed.stdout)] == [
        ("welcome", "ana", {"email": "ana@example.com"})
    ]
    # The worker, on the project's App (DUETIME_APP), runs it.
    store = duetime.App(env["DUETIME_URL"])
    store.declare("welcome")
    deadline = time.monotonic() + 30
    with store.sync() as client:
        while client.get("welcome", "ana") is not None:
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()
            assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()
            time.sleep(0.05)
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 0
    log = (tmp_path / "worker.log").read_text()
    assert "welcome mail to ana@example.com (attempt 1)" in log
    assert "worker started: types welcome" in log and "worker stopped" in log


def test_exit_codes_and_help_are_duetimes(env: dict[str, str]) -> None:
    # The store exists (a read does not create it), the task does not: exit 3.
    Path(env["DUETIME_URL"].removeprefix("sqlite:///")).touch()
    missing = manage(env, "duetime", "show", "welcome", "nobody")
    assert missing.returncode == 3, missing.stderr
    helped = manage(env, "duetime", "worker", "--help")
    assert helped.returncode == 0
    assert helped.stdout.startswith("Usage: manage.py duetime worker [OPTIONS] MODULE:APP")
    # manage.py's own options are applied by manage.py, not handed on.
    listed = manage(env, "duetime", "ls", "--settings", "mysite.settings", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []


def test_without_duetime_app_the_commands_work_on_duetime_url(
    env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "bare_settings.py").write_text(
        "from mysite.settings import *\ndel DUETIME_APP\n", encoding="utf-8"
    )
    bare = ["--pythonpath", str(tmp_path), "--settings", "bare_settings"]
    done = manage(env, "duetime", "schedule", "welcome", "bo", "--delay", "3600", *bare)
    assert done.returncode == 0, done.stderr
    listed = manage(env, "duetime", "ls", "--json", *bare)
    assert listed.returncode == 0, listed.stderr
    assert [t["id"] for t in json.loads(listed.stdout)] == ["bo"]
    # No app to run: the worker says what it needs.
    worker = manage(env, "duetime", "worker", *bare)
    assert worker.returncode == 2 and "MODULE:APP" in worker.stderr


def test_a_bad_setting_stops_the_project_naming_it(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "bad_settings.py").write_text(
        "from mysite.settings import *\nDUETIME_APP = 'mysite.tasks'\n", encoding="utf-8"
    )
    done = manage(env, "check", "--pythonpath", str(tmp_path), "--settings", "bad_settings")
    assert done.returncode != 0
    assert "DUETIME_APP must be 'module:attribute'" in done.stderr


CALL_COMMAND = """
import django, json
django.setup()
from django.core.management import CommandError, call_command
call_command("duetime", "schedule", "welcome", "cy", "--delay", "3600")
try:
    call_command("duetime", "show", "welcome", "nobody")
except CommandError as exc:
    print("error", exc.returncode, exc)
"""


def test_call_command_runs_duetime_in_the_process(env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CALL_COMMAND],
        cwd=PROJECT,
        env={**env, "DJANGO_SETTINGS_MODULE": "mysite.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "welcome/cy due" in done.stdout
    assert "error 3 " in done.stdout and "nobody" in done.stdout
