"""The duetime command end to end, against a real store."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from duetime.cli import main
from duetime.stores.redis.keys import type_keys
from tests.hostile import RawRedis

ROOT = Path(__file__).resolve().parents[2]

APP_MODULE = """
import gc, os, duetime
app = duetime.App(os.environ["CLI_TEST_URL"], namespace=os.environ["CLI_TEST_NS"])

@app.task("mail", retries=0)
async def mail(payload, ctx):
    with open(os.environ["CLI_TEST_LEDGER"], "a") as f:
        f.write(ctx.task_id + "\\n")
    with open(os.environ["CLI_TEST_LEDGER"] + ".gc", "w") as f:
        f.write(f"{gc.get_freeze_count()} {gc.get_threshold()[0]}")
    if payload.get("fail"):
        raise RuntimeError("refused")

@app.cron("0 9 * * 1-5", name="weekdayReport", tz="Europe/Madrid")
async def weekday_report(ctx):
    pass
"""


@pytest.fixture
def cli_env(
    tmp_path: Path, redis_url: str, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> Path:
    (tmp_path / "cliapp.py").write_text(APP_MODULE)
    ledger = tmp_path / "ledger.txt"
    monkeypatch.setenv("CLI_TEST_URL", redis_url)
    monkeypatch.setenv("CLI_TEST_NS", namespace)
    monkeypatch.setenv("CLI_TEST_LEDGER", str(ledger))
    monkeypatch.chdir(tmp_path)
    sys.modules.pop("cliapp", None)
    return ledger


def run(*args: str) -> str:
    result = CliRunner().invoke(main, ["--log-level", "WARNING", *args])
    assert result.exit_code == 0, result.output
    return result.stdout  # without warnings (no worker ran on the store lately)


def test_schedule_list_show_and_cancel(cli_env: Path) -> None:
    out = run(
        "schedule",
        "cliapp:app",
        "mail",
        "m1",
        "--at",
        "2031-01-02T03:04:05+00:00",
        "--payload",
        '{"to": "a@b.c"}',
    )
    assert "mail/m1 due 2031-01-02T03:04:05.000+00:00" in out
    assert "m1\tdue\t2031-01-02T03:04:05.000+00:00" in run("ls", "cliapp:app", "mail")
    shown = json.loads(run("show", "cliapp:app", "mail", "m1"))
    assert (shown["state"], shown["payload"]) == ("due", {"to": "a@b.c"})
    assert "mail\t1\t0\t0" in run("stats", "cliapp:app")
    assert "cancelled mail/m1" in run("cancel", "cliapp:app", "mail", "m1")
    result = CliRunner().invoke(main, ["cancel", "cliapp:app", "mail", "m1"])
    assert result.exit_code == 3 and "no task mail/m1" in result.output


def test_schedule_keeps_merges_and_skips_a_task_that_finished_lately(cli_env: Path) -> None:
    at = "2031-01-02T03:04:05+00:00"
    run("schedule", "cliapp:app", "mail", "m1", "--at", at, "--payload", '{"a": {"x": 1}}')

    merged = ["--payload", '{"a": {"y": 2}}', "--if-exists", "merge"]
    assert "mail/m1 due 2031-01-02T03:04:05.000+00:00" in run(
        "schedule", "cliapp:app", "mail", "m1", *merged
    )
    kept = ["--at", "2032-01-01T00:00:00Z", "--payload", "{}", "--if-exists", "keep"]
    assert "mail/m1 due 2031-01-02T03:04:05.000+00:00" in run(
        "schedule", "cliapp:app", "mail", "m1", *kept
    )
    shown = json.loads(run("show", "cliapp:app", "mail", "m1"))
    assert (shown["due"], shown["payload"]) == (
        "2031-01-02T03:04:05.000+00:00",
        {"a": {"x": 1, "y": 2}},
    )

    run("schedule", "cliapp:app", "mail", "u1", "--unique-for", "1h")
    run("worker", "cliapp:app", "--burst")
    assert cli_env.read_text().split() == ["u1"]
    out = run("schedule", "cliapp:app", "mail", "u1", "--unique-for", "1h")
    assert "mail/u1 not scheduled" in out
    doc = json.loads(run("schedule", "cliapp:app", "mail", "u1", "--unique-for", "1h", "--json"))
    assert (doc["id"], doc["due"]) == ("u1", None)
    result = CliRunner().invoke(
        main, ["schedule", "cliapp:app", "mail", "x", "--if-exists", "sometimes"]
    )
    assert result.exit_code == 2 and "sometimes" in result.output
    result = CliRunner().invoke(main, ["schedule", "cliapp:app", "mail", "x", "--unique-for", "0"])
    assert result.exit_code == 2 and "--unique-for': must be positive" in result.output


def test_submit_prints_the_id_it_picked(cli_env: Path) -> None:
    task_id = run(
        "submit", "cliapp:app", "mail", "--delay", "3600", "--payload", '{"to": "d@e.f"}'
    ).strip()

    assert len(task_id) == 12 and task_id.isalnum()
    shown = json.loads(run("show", "cliapp:app", "mail", task_id))
    assert (shown["state"], shown["payload"]) == ("due", {"to": "d@e.f"})
    result = CliRunner().invoke(main, ["submit", "cliapp:app", "mail", "--at", "tomorrow"])
    assert result.exit_code == 2 and "tomorrow" in result.output


def test_bad_input_is_reported_without_a_traceback(cli_env: Path) -> None:
    result = CliRunner().invoke(main, ["schedule", "cliapp:app", "mial", "x"])
    assert result.exit_code == 2 and "unknown task type 'mial'" in result.output
    result = CliRunner().invoke(main, ["schedule", "cliapp:app", "mail", "x", "--payload", "[1]"])
    assert result.exit_code == 2 and "payload" in result.output
    result = CliRunner().invoke(main, ["ls", "nosuchmodule:app"])
    assert result.exit_code == 2 and "cannot import" in result.output


def test_cron_lists_schedules_with_their_next_runs(cli_env: Path) -> None:
    out = run("cron", "cliapp:app", "--next", "2")
    assert "weekdayReport\tweekdayReport\t0 9 * * 1-5 (Europe/Madrid)" in out
    assert "declared, not yet stored" in out
    nexts = [line for line in out.splitlines() if "next:" in line]
    assert len(nexts) == 2 and all("T09:00:00+0" in line for line in nexts)


@pytest.mark.parametrize("gc_flag", [[], ["--no-gc-tuning"]], ids=["gc-tuned", "gc-as-is"])
def test_the_worker_command_runs_tasks_and_stops_on_sigterm(
    cli_env: Path, tmp_path: Path, gc_flag: list[str]
) -> None:
    run("schedule", "cliapp:app", "mail", "ok")
    run("schedule", "cliapp:app", "mail", "bad", "--payload", '{"fail": true}')
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "duetime.cli", "worker", "cliapp:app", "--grace", "2", *gc_flag],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 25
        while time.monotonic() < deadline:
            if cli_env.exists() and sorted(cli_env.read_text().split()) == ["bad", "ok"]:
                break
            time.sleep(0.05)
        # Both ran; stopped on SIGTERM, the worker settles what it ran before it exits
        # (the dead letter below shows it), so no sleep for the settle.
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=15)
    assert proc.returncode == 0, stderr
    assert "worker started" in stderr and "worker stopped" in stderr
    assert sorted(cli_env.read_text().split()) == ["bad", "ok"]
    dead = run("ls", "cliapp:app", "mail", "--state", "dead")
    assert "bad\tdead" in dead and "RuntimeError: refused" in dead
    assert "mail/bad due again" in run("retry", "cliapp:app", "mail", "bad")
    assert "weekdayReport" in run("cron", "cliapp:app")
    # The handlers saw the worker's garbage collector: frozen start-up objects and a young
    # threshold of 10,000, unless the flag left it as this Python sets it (700 on 3.11 and
    # 3.12, 2,000 on 3.13; 3.12.1 itself freezes a few hundred objects at start).
    frozen, young = map(int, Path(str(cli_env) + ".gc").read_text().split())
    bare = subprocess.run(
        [sys.executable, "-c", "import gc; print(gc.get_freeze_count(), gc.get_threshold()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if gc_flag:
        assert [str(frozen), str(young)] == bare
    else:
        assert frozen > int(bare[0]) + 1000 and young == 10_000


def test_listings_show_bad_data_with_its_reason(cli_env: Path, redis_url: str) -> None:
    """A record that is not UTF-8 and an id that is not either: the listings print them
    (the id with escapes), with the reason, and `show` and `cancel` take the id shown."""
    run("schedule", "cliapp:app", "mail", "m1", "--delay", "3600")
    raw = RawRedis(redis_url, os.environ["CLI_TEST_NS"])
    try:
        raw.set_record("mail", "m1", b"\xff\xfe")
        keys = type_keys(os.environ["CLI_TEST_NS"], "mail")
        raw.client.zadd(keys.dead, {b"bad\xffid": 1})
        raw.client.hset(keys.data, b"bad\xffid", b'{"p":{}}')
    finally:
        raw.close()

    listed = run("ls", "cliapp:app", "mail")
    assert "m1\tdue" in listed and "record is not UTF-8 text" in listed
    shown = json.loads(run("show", "cliapp:app", "mail", "m1"))
    assert shown["payload"] is None and "UTF-8" in shown["error"]
    dead = run("ls", "cliapp:app", "mail", "--state", "dead")
    assert "bad\\udcffid\tdead" in dead
    assert "cancelled" in run("cancel", "cliapp:app", "mail", "bad\udcffid")


def test_one_shot_commands_print_no_info_lines_about_opening_the_store(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"

    def schedule(task_id: str, *more: str) -> None:
        args = ["schedule", "--url", url, "mail", task_id, "--delay", "60", *more]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output

    caplog.set_level(logging.INFO)
    schedule("m1")  # the file is made, and its schema written
    assert [r.getMessage() for r in caplog.records if r.name.startswith("duetime")] == []
    assert logging.getLogger("duetime.stores").level == logging.NOTSET  # left as it was

    caplog.set_level(logging.DEBUG)
    schedule("m2", "--log-level", "debug")  # everything
    assert any("SQLite store open" in r.getMessage() for r in caplog.records)
