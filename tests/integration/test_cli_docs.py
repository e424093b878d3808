"""The examples of output in docs/cli.md are what the commands print: each is made again
on a real store and compared, times, durations, worker ids and paths aside, so that the
page cannot drift from the command (a new column, a reworded error)."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from duetime.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "cli.md").read_text()

APP_MODULE = """
import duetime

app = duetime.App()  # DUETIME_URL

@app.task("mail", retries=0)
async def mail(payload, ctx):
    if payload.get("fail"):
        raise RuntimeError("refused")

@app.task("report", retries=1, backoff=0)  # retried at once: within the burst
async def report(payload, ctx):
    if ctx.attempt == 1:
        raise ValueError("smtp down")
"""

#: Each error line of "Errors name their option", and the command that prints it.
ERRORS = {
    "'--delay'": ["schedule", "docsapp:app", "mail", "x", "--delay", "5x"],
    "'--at'": ["schedule", "docsapp:app", "mail", "x", "--at", "2030-01-02T09:00"],
    "'--every'": ["schedule", "docsapp:app", "mail", "x", "--every", "-5"],
    "'--until'": ["schedule", "docsapp:app", "mail", "x", "--until", "2031-01-01T00:00:00Z"],
    "'TASK_TYPE'": ["schedule", "docsapp:app", "mial", "x"],
}

TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00")


def block_after(marker: str) -> list[str]:
    """The lines of the first fenced block after ``marker`` on the page."""
    start = PAGE.index(marker)
    fence = PAGE.index("```", start)
    body = PAGE[PAGE.index("\n", fence) + 1 : PAGE.index("```", fence + 3)]
    return [line.strip() for line in body.splitlines() if line.strip()]


def normal(line: str, **places: str) -> str:
    """``line`` with what differs from run to run replaced: times, durations, worker ids,
    and the ``places`` (a real path -> the page's)."""
    for real, shown in places.items():
        line = line.replace(real, shown)
    line = TIME.sub("<time>", line)
    line = re.sub(r"\t\d+ ms\t", "\t<n> ms\t", line)
    return re.sub(r"\t[\w.-]+-\d+-[0-9a-f]{6}\t", "\t<worker>\t", line)


@pytest.fixture
def docs_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "docsapp.py").write_text(APP_MODULE)
    (tmp_path / "duetime.db").touch()  # an empty store: a read does not create one
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DUETIME_URL", f"sqlite:///{tmp_path / 'duetime.db'}")
    monkeypatch.delenv("DUETIME_NAMESPACE", raising=False)
    monkeypatch.delenv("DUETIME_APP", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("docsapp", None)
    return tmp_path


def duetime(*args: str) -> Any:
    return CliRunner().invoke(main, ["--log-level", "WARNING", *args])


def ok(*args: str) -> str:
    result = duetime(*args)
    assert result.exit_code == 0, (args, result.output)
    return str(result.stdout)


def run_due() -> None:
    import docsapp  # type: ignore[import-not-found]

    async def burst() -> None:
        async with docsapp.app:
            await docsapp.app.serve(burst=True)

    asyncio.run(burst())


def test_the_listing_and_history_examples_are_what_ls_and_history_print(
    docs_env: Path,
) -> None:
    ok("schedule", "docsapp:app", "mail", "m1", "--at", "2030-01-02T09:00:00Z")
    ok("schedule", "docsapp:app", "mail", "d0", "--payload", '{"fail": true}')
    ok("schedule", "docsapp:app", "report", "m1")
    run_due()
    listed = ok("ls", "docsapp:app", "mail", "--state", "all").splitlines()
    shown = block_after("`ls` prints a header line")
    assert listed[0] == shown[0]  # the header, column for column
    assert [normal(line) for line in listed[1:]] == [normal(line) for line in shown[1:]]
    runs = ok("history", "docsapp:app", "report").splitlines()
    shown = block_after("`history` prints a header line")
    assert runs[0] == shown[0]
    shown_runs = [normal(line).replace("\tvm-1234-a1b2c3\t", "\t<worker>\t") for line in shown[1:]]
    assert [normal(line) for line in runs[1:]] == shown_runs


def test_each_error_example_is_what_its_command_prints(docs_env: Path) -> None:
    shown = [line for line in block_after("## Errors name their option") if line]
    assert len(shown) == len(ERRORS)
    for line in shown:
        option = next(o for o in ERRORS if f"Invalid value for {o}" in line)
        result = duetime(*ERRORS[option])
        assert result.exit_code == 2, result.output
        printed = result.stderr.strip().splitlines()[-1]
        head, _, tail = line.partition("...")  # "..." stands for what the page leaves out
        assert printed.startswith(head) and printed.endswith(tail), (line, printed)


def test_the_messages_the_page_quotes_are_what_the_commands_say(docs_env: Path) -> None:
    gone = duetime("show", "mail", "m1")
    quoted = re.search(r"`(no task mail/m1: [^`]*)`", PAGE)
    assert quoted is not None
    assert gone.exit_code == 3
    assert gone.stderr.strip() == "Error: " + " ".join(quoted.group(1).split())
    where = str(docs_env / "duetime.db")
    warned = duetime("schedule", "mail", "w1")
    (warning,) = block_after("`schedule` and `submit` warn on stderr")
    assert normal(warned.stderr.strip(), **{where: "/home/ana/elsewhere/duetime.db"}) == warning
    typo = str(docs_env / "typo.db")
    missing = duetime("ls", "--url", f"sqlite:///{typo}")
    (error,) = block_after("never creates the file")
    assert normal(missing.stderr.strip(), **{typo: "/home/ana/elsewhere/typo.db"}) == error
