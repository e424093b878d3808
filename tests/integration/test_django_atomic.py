"""``connection=django.db.connection``: a task scheduled inside ``transaction.atomic()`` of a
Django project whose database is the store's (SQLite, PostgreSQL) commits and rolls back
with it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.postgres import DATABASE, fresh_schema

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    done = subprocess.run(
        [sys.executable, "-m", "tests.integration.django_atomic", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_task_commits_and_rolls_back_with_the_atomic_block_on_sqlite(tmp_path: Path) -> None:
    path = str(tmp_path / "a.db")
    assert run(f"sqlite:///{path}", "sqlite3", path) == ["u1 True", "u2 False", "users u1"]


def test_a_task_commits_and_rolls_back_with_the_atomic_block_on_postgres() -> None:
    with fresh_schema() as url:
        assert run(url, "postgresql", DATABASE) == ["u1 True", "u2 False", "users u1"]


def test_schedule_on_commit_schedules_after_the_commit_only(redis_url: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    args = [sys.executable, "-m", "tests.integration.django_on_commit"]
    done = subprocess.run(
        [*args, redis_url, str(tmp_path / "a.db")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "inside False ('welcome', 'u1')",
        "committed True",
        "rolled back False",
        "outside True",
    ]
