"""The examples run as the docs say (docs/getting-started.md, `make demo`), on the embedded
default store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_series_premiere_example_runs_on_sqlite(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DUETIME_URL"}
    env["PYTHONPATH"] = str(ROOT / "src")
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "series_premiere.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for weeks in (3, 2, 1):  # one reminder a "week", the hook counting down
        assert f"to eleven@hawkins.example: Stranger Things starts in {weeks} week(s)" in out
    assert "starts in 0 week" not in out  # the hook ended the series
    assert "welcome mail to new@example.com (attempt 2)" in out  # retried once, then done
    assert "nothing left due: {'due': 0, 'running': 0, 'dead': 0}" in out
    assert (tmp_path / "duetime.db").exists()  # App() with no URL: SQLite in the cwd
