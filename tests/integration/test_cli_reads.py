"""The duetime command as a new user meets it: a read never creates the store a typo
names, a suggested command works when pasted, and a bad option is named alone."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from duetime.cli import main

ROOT = Path(__file__).resolve().parents[2]

#: Every command that reads or changes existing tasks, none of which may create a store.
READS = [
    ["ls"],
    ["ls", "mail"],
    ["show", "mail", "m1"],
    ["stats"],
    ["workers"],
    ["history", "mail"],
    ["cron", "list"],
    ["cancel", "mail", "m1"],
    ["abort", "mail", "m1"],
    ["retry", "mail", "m1"],
    ["run-now", "mail", "m1"],
]

APP_MODULE = """
import duetime

app = duetime.App("sqlite:///typo.db")

@app.task("mail")
async def mail(payload):
    pass
"""


@pytest.mark.parametrize("args", READS, ids=[" ".join(a) for a in READS])
def test_a_read_on_a_sqlite_file_that_does_not_exist_fails_naming_it_and_creates_nothing(
    tmp_path: Path, args: list[str]
) -> None:
    path = tmp_path / "typo.db"
    result = CliRunner().invoke(main, [*args, "--url", f"sqlite:///{path}"])
    assert result.exit_code == 1, result.output
    assert f"no SQLite database at {path}" in result.output
    assert list(tmp_path.iterdir()) == []


def test_a_read_through_an_app_module_creates_nothing_and_a_producing_call_does(
    tmp_path: Path,
) -> None:
    (tmp_path / "tasks.py").write_text(APP_MODULE)

    def duetime(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "duetime.cli", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )

    listed = duetime("ls", "tasks:app")
    assert listed.returncode == 1, listed.stderr
    assert f"no SQLite database at {tmp_path / 'typo.db'}" in listed.stderr
    assert not (tmp_path / "typo.db").exists()
    scheduled = duetime("schedule", "tasks:app", "mail", "m1", "--delay", "60")
    assert scheduled.returncode == 0, scheduled.stderr
    assert (tmp_path / "typo.db").exists()
    assert "m1\tdue" in duetime("ls", "tasks:app", "mail").stdout


@pytest.mark.parametrize("how", ["url", "app"])
def test_the_command_suggested_for_a_task_that_is_gone_works_when_pasted(
    tmp_path: Path, how: str
) -> None:
    (tmp_path / "tasks.py").write_text(APP_MODULE)
    url = f"sqlite:///{tmp_path / 'my tasks.db'}"  # a space: the suggestion quotes it
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUETIME_")}
    env["PYTHONPATH"] = str(ROOT / "src")

    def shell(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
        )

    where = f"--url {shlex.quote(url)} --namespace ns" if how == "url" else "tasks:app"
    prefix = f"{shlex.quote(sys.executable)} -m duetime.cli"
    if how == "app":
        assert shell(f"{prefix} schedule tasks:app mail m0 --delay 60").returncode == 0
    else:
        assert shell(f"{prefix} schedule {where} mail m0 --delay 60").returncode == 0
    shown = shell(f"{prefix} show {where} mail 'gone one'")
    assert shown.returncode == 3, shown.stderr
    suggested = re.search(r"its runs are: (duetime .*)\)$", shown.stderr.strip())
    assert suggested is not None, shown.stderr
    pasted = shell(prefix + suggested.group(1).removeprefix("duetime"))
    assert pasted.returncode == 0, (suggested.group(1), pasted.stderr)
    assert "no runs of mail/gone one kept" in pasted.stderr


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--url", "redsi://x"], {}, "Invalid value for --url: unknown store URL scheme 'redsi'"),
        (["--url", "sqlite://host/x.db"], {}, "Invalid value for --url: SQLite URL"),
        (
            ["--namespace", "a b"],
            {"DUETIME_URL": "sqlite:///x.db"},
            "Invalid value for --namespace",
        ),
        ([], {"DUETIME_URL": "redsi://x"}, "Invalid value for DUETIME_URL: unknown store"),
        (
            [],
            {"DUETIME_URL": "sqlite:///x.db", "DUETIME_NAMESPACE": "a b"},
            "for DUETIME_NAMESPACE",
        ),
    ],
)
def test_a_bad_url_or_namespace_is_named_alone(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    named: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["ls", *args], env={"DUETIME_APP": None, **env})
    assert result.exit_code == 2, result.output
    assert named in result.stderr and "--url/--namespace" not in result.stderr
    assert not list(tmp_path.iterdir())
