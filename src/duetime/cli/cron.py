"""``duetime cron``: the cron schedules with their next run times."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click

from duetime.cli.output import cron_doc, cron_lines, echo, emit
from duetime.cli.target import Target, app_command
from duetime.cli.values import MAX_NEXT_RUNS
from duetime.errors import ScheduleNotFound
from duetime.features.cron.manage import CronInfo


@app_command(name="cron")
@click.argument("name", required=False)
@click.option(
    "--next",
    "count",
    type=click.IntRange(1, MAX_NEXT_RUNS),
    default=3,
    show_default=True,
    help="Next run times to show.",
)
def cron_list(name: str | None, count: int, **options: Any) -> None:
    """List cron schedules with their next run times; or only the schedule NAME (exit code
    3 when there is none)."""
    target = Target.from_options(options)

    async def collect() -> list[tuple[CronInfo, list[datetime]]]:
        rows = []
        for info in await target.app.crons():
            if name is None or info.name == name:
                upcoming = [] if info.paused else await target.app.next_runs(info.name, count)
                rows.append((info, upcoming))
        if name is not None and not rows:
            raise ScheduleNotFound(name)
        return rows

    rows = target.run(collect)
    if target.as_json:
        emit([cron_doc(info, upcoming) for info, upcoming in rows])
        return
    for info, upcoming in rows:
        for line in cron_lines(info, upcoming):
            echo(line)
