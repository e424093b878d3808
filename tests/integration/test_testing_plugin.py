"""duetime's pytest plugin, as a user's project meets it: pytest run in a process of its own
on a small project (an app module, a conftest.py, a test file), with the plugin found
through its entry point, under pytest-asyncio (auto and strict mode) and under anyio."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TASKS = """
from datetime import timedelta
import duetime

app = duetime.App()  # no URL: ./duetime.db, which the harness keeps the tests from
sent = []

@app.task("sendWelcome")
async def send_welcome(payload):
    sent.append(payload["to"])

async def signup(email):
    await app.schedule("sendWelcome", email, delay=timedelta(hours=1), payload={"to": email})
"""

TESTS = """
from datetime import timedelta
import pytest
import tasks

{mark}
async def test_welcome_mail(duetime_harness):
    h = duetime_harness
    await tasks.signup("ana@example.com")
    assert [t.task_id for t in await h.due()] == []
    h.advance(timedelta(hours=1))
    runs = await h.run_due()
    assert [(r.task_type, r.outcome) for r in runs] == [("sendWelcome", "done")]
    assert runs[0].error is None

{mark}
async def test_each_test_has_a_store_of_its_own(duetime_harness):
    assert await duetime_harness.due() == []
    assert await tasks.app.list("sendWelcome") == []
"""

APP_FIXTURE = """
import pytest
import tasks

@pytest.fixture
def duetime_app():
    return tasks.app
"""

ANYIO_BACKEND = """
@pytest.fixture
def anyio_backend():
    return "asyncio"
"""


def project(root: Path, ini: str, conftest: str, mark: str, *, asyncio: bool = True) -> None:
    (root / "tasks.py").write_text(TASKS)
    (root / "test_mail.py").write_text(TESTS.format(mark=mark))
    (root / "conftest.py").write_text(conftest)
    if asyncio:  # pytest-asyncio asks for it
        ini += "asyncio_default_fixture_loop_scope = function\n"
    (root / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n" + ini)


def pytest_run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DUETIME_"))}
    env["PYTHONPATH"] = str(root)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert not (root / "duetime.db").exists(), "a test wrote the app's own store"
    return proc


def test_pytest_asyncio_in_auto_mode_with_a_duetime_app_fixture(tmp_path: Path) -> None:
    project(tmp_path, "asyncio_mode = auto\n", APP_FIXTURE, mark="")
    proc = pytest_run(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout


def test_pytest_asyncio_in_strict_mode_with_the_app_named_in_the_ini(tmp_path: Path) -> None:
    project(tmp_path, "duetime_app = tasks:app\n", "", mark="@pytest.mark.asyncio")
    proc = pytest_run(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout


def test_anyio_without_pytest_asyncio(tmp_path: Path) -> None:
    project(tmp_path, "", APP_FIXTURE + ANYIO_BACKEND, mark="@pytest.mark.anyio", asyncio=False)
    proc = pytest_run(tmp_path, "-p", "no:asyncio")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout


def test_anyio_beside_pytest_asyncio_in_strict_mode(tmp_path: Path) -> None:
    project(tmp_path, "", APP_FIXTURE + ANYIO_BACKEND, mark="@pytest.mark.anyio")
    proc = pytest_run(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout


@pytest.mark.parametrize(
    ("ini", "message"),
    [
        ("", "define a duetime_app fixture that returns it, or set duetime_app = MODULE:APP"),
        ("duetime_app = tasks:sent\n", "duetime_app = 'tasks:sent' names a list, not a"),
        ("duetime_app = tasks\n", "duetime_app = 'tasks': expected MODULE:APP"),
    ],
)
def test_without_an_app_the_fixture_says_how_to_name_one(
    tmp_path: Path, ini: str, message: str
) -> None:
    project(tmp_path, "asyncio_mode = auto\n" + ini, "", mark="")
    proc = pytest_run(tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert message in proc.stdout


def test_without_an_async_runner_the_fixture_says_which_it_needs(tmp_path: Path) -> None:
    project(tmp_path, "", APP_FIXTURE, mark="", asyncio=False)
    (tmp_path / "test_mail.py").write_text("def test_sync(duetime_harness):\n    pass\n")
    proc = pytest_run(tmp_path, "-p", "no:asyncio", "-p", "no:anyio")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "duetime_harness is an async fixture: run the test with pytest-asyncio" in proc.stdout
