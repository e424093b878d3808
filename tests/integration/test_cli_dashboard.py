"""``duetime dashboard`` as a process: a port in use is one line and exit code 1, before any
login link; ``--token-file`` keeps one token across restarts; ``--json`` is not offered."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from duetime.cli import main
from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[2]


def dashboard(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    (tmp_path / "d.db").touch()  # an empty file: the dashboard does not create one
    return subprocess.Popen(
        [sys.executable, "-m", "duetime.cli", "--log-level", "WARNING", "dashboard", *args],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "DUETIME_URL": "sqlite:///d.db"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_port_in_use_is_one_line_and_exit_code_1_before_any_link(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = dashboard(tmp_path, "--port", str(port))
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, err
    assert out == ""  # no login link to a port another program answers
    assert err == f"Error: port {port} is in use: pick another with --port\n"


def started(proc: subprocess.Popen[str]) -> str:
    """The login link the dashboard printed as it started."""
    assert proc.stdout is not None and proc.stderr is not None
    line = proc.stdout.readline()
    assert "log in at " in line, (line, proc.stderr.read() if proc.poll() is not None else "")
    return line.rsplit("log in at ", 1)[1].strip()


def stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)


def answer(url: str) -> int:
    class Stay(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None  # the 303 itself is the answer

    try:
        with urllib.request.build_opener(Stay).open(url, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_token_file_keeps_one_token_across_restarts(tmp_path: Path) -> None:
    token_file = tmp_path / "secrets" / "dashboard.token"
    token_file.parent.mkdir()
    port = free_port()
    first = dashboard(tmp_path, "--port", str(port), "--token-file", str(token_file))
    try:
        link = started(first)
        token = token_file.read_text().strip()
        assert link == f"http://127.0.0.1:{port}/login?token={token}" and len(token) >= 30
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert answer(link) == 303
    finally:
        stop(first)
    port = free_port()
    again = dashboard(tmp_path, "--port", str(port), "--token-file", str(token_file))
    try:
        assert started(again) == f"http://127.0.0.1:{port}/login?token={token}"
        assert answer(f"http://127.0.0.1:{port}/login?token=guess") == 401
    finally:
        stop(again)


def test_token_file_mistakes_and_options_that_mean_nothing_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    empty = tmp_path / "empty.token"
    empty.write_text("\n")
    for args, said in (
        (["--token-file", str(empty)], "holds no token"),
        (["--token-file", str(tmp_path)], "--token-file"),  # a directory
        (["--token", "x" * 32, "--token-file", str(empty)], "not both"),
        (["--json"], "No such option '--json'"),
    ):
        result = CliRunner().invoke(main, ["dashboard", "--url", "sqlite:///d.db", *args])
        assert result.exit_code == 2, (args, result.output)
        assert said in result.stderr, (args, result.stderr)
