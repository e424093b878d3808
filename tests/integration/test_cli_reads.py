"""The duetime command as a new user meets it: a read never creates the store a typo
names, a suggested command works when pasted, and a bad option is named alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from duetime.cli import main

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
