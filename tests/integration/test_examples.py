"""The examples run as the docs say (docs/getting-started.md, `make demo`), on the embedded
default store."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import duetime

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


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _http(method: str, url: str) -> dict[str, str]:
    request = urllib.request.Request(url, method=method)
    with urllib.request.urlopen(request, timeout=10) as reply:
        return dict(json.loads(reply.read()))


def test_the_fastapi_example_runs_under_uvicorn(tmp_path: Path) -> None:
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "DUETIME_URL": f"sqlite:///{tmp_path / 'web.db'}"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "examples.fastapi_app:web", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                _http("GET", f"{base}/signups/nobody@example.com")
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "no server"
                time.sleep(0.1)
        assert _http("POST", f"{base}/signups?email=ana@example.com&delay=0")["task"] == (
            "ana@example.com"
        )
        later = _http("POST", f"{base}/signups?email=bo@example.com&delay=3600")
        assert later["task"] == "bo@example.com"
        while _http("GET", f"{base}/signups/ana@example.com")["state"] != "sent":
            assert time.monotonic() < deadline, "the welcome mail was not sent"
            time.sleep(0.05)
        assert _http("GET", f"{base}/signups/bo@example.com")["state"] == "due"
    finally:
        server.send_signal(signal.SIGTERM)
        out, _ = server.communicate(timeout=30)
    # Recent uvicorn versions end by raising the signal they caught again, once shut down.
    assert server.returncode in (0, -signal.SIGTERM), out
    assert "Application shutdown complete." in out
    lines = out.splitlines()
    assert "signups open" in lines
    assert "welcome mail to ana@example.com (attempt 1)" in lines
    # The web app's shutdown ran, the worker's inside it.
    assert lines.index("signups closed") > lines.index("signups open")
    assert "welcome mail to bo@example.com" not in out  # not due: still in the store

    async def still_due() -> str | None:
        async with duetime.App(env["DUETIME_URL"]) as app:
            app.declare("welcome")
            info = await app.get("welcome", "bo@example.com")
            return None if info is None else info.state

    assert asyncio.run(still_due()) == "due"


def test_the_sync_script_example_schedules_from_blocking_code(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DUETIME_URL"}
    env["PYTHONPATH"] = str(ROOT / "src")
    script = [sys.executable, str(ROOT / "examples" / "sync_script.py")]
    for _ in range(2):  # run twice: the same ids move, nothing is doubled
        done = subprocess.run(
            script, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(" due at ")[0] for line in lines[:3]] == [
        "report for acme",
        "report for globex",
        "report for initech",
    ]
    assert lines[3] == "monthly-acme: due, payload {'customer': 'acme'}"
    assert lines[4] == "counts: {'due': 2, 'running': 0, 'dead': 0}"
    assert (tmp_path / "duetime.db").exists()
