"""``duetime show`` prints the result of a task's last finished run, and ``duetime history
--json`` each run's."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from click.testing import CliRunner

import duetime
from duetime.cli import main
from tests.helpers import eventually, running


async def ran_report(url: str, namespace: str) -> None:
    """A series whose handler returns a result: run once (its task stays, due again in an
    hour)."""
    app = duetime.App(url, namespace=namespace)

    @app.task("report")
    async def report(payload: dict[str, Any]) -> dict[str, int]:
        return {"rows": 1200}

    try:
        async with running(app):
            await app.schedule("report", "r1", every=timedelta(hours=1))

            async def ran() -> bool:  # (result(wait=) of a series waits for its next run)
                info = await app.get("report", "r1")
                return info is not None and info.result == {"rows": 1200}

            await eventually(ran, within=25, what="the run's result")
    finally:
        await app.close()


def test_show_prints_the_last_result(tmp_path: Path, namespace: str) -> None:
    url = f"sqlite:///{tmp_path / 'duetime.db'}"
    asyncio.run(ran_report(url, namespace))
    args = ["--log-level", "WARNING", "show", "report", "r1", "--url", url]
    args += ["--namespace", namespace]
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["result"] == {"rows": 1200}
    shown = CliRunner().invoke(main, args)
    assert shown.exit_code == 0 and '"rows": 1200' in shown.stdout
    history = ["--log-level", "WARNING", "history", "report", "r1", "--json", "--url", url]
    listed = CliRunner().invoke(main, [*history, "--namespace", namespace])
    assert listed.exit_code == 0, listed.output
    assert [run["result"] for run in json.loads(listed.stdout)] == [{"rows": 1200}]
