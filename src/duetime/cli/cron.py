"""``duetime cron``: the cron schedules with their next run times, and the commands on one
(``duetime cron trigger NAME``, ``duetime cron backfill NAME``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click

from duetime.cli.output import cron_doc, cron_lines, echo, emit, times
from duetime.cli.target import Target, app_command
from duetime.cli.values import MAX_NEXT_RUNS, Moment
from duetime.errors import ScheduleNotFound
from duetime.features.cron.manage import CronInfo

#: The command ``duetime cron`` runs when no other is named.
LISTING = "list"


class CronGroup(click.Group):
    """``duetime cron [APP] [NAME]`` lists; ``duetime cron COMMAND ...`` runs a command on
    schedules. The first word that is neither an option (with its value) nor ``MODULE:APP``
    says which: the name of a command, or else a schedule's name (``duetime cron list
    NAME`` lists a schedule named like a command)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        word = _first_word(self.commands[LISTING], args)
        if word is None and any(arg in ("--help", "-h") for arg in args):
            return super().parse_args(ctx, args)  # the group's help
        if word is not None and word in self.commands:
            # The command first, then every other argument, wherever it was given.
            rest = list(args)
            rest.remove(word)
            return super().parse_args(ctx, [word, *rest])
        return super().parse_args(ctx, [LISTING, *args])


def _first_word(command: click.Command, args: list[str]) -> str | None:
    """The first argument of ``args`` that is neither an option of ``command``, nor an
    option's value, nor ``MODULE:APP`` (it holds a colon)."""
    takes_value = {
        name
        for p in command.params
        if isinstance(p, click.Option) and not p.is_flag and not p.count
        for name in p.opts
    }
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--":
            return None
        elif arg in takes_value:
            skip = True
        elif not arg.startswith("-") and ":" not in arg:
            return arg
    return None


@click.group(name="cron", cls=CronGroup)
def cron() -> None:
    """The cron schedules: ``duetime cron [APP] [NAME]`` lists them (or the schedule NAME)
    with their next run times; ``duetime cron trigger NAME`` runs one now; ``duetime cron
    backfill NAME --from --to`` runs the ticks of a past range."""


@app_command(name=LISTING)
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


@app_command(name="trigger")
@click.argument("name")
def cron_trigger(name: str, **options: Any) -> None:
    """Run the schedule NAME once now, beside its ticks (which stay as they are): a task of
    its own, ``NAME@<now ms>``, whose id is printed (exit code 3 when there is no such
    schedule)."""
    target = Target.from_options(options, creates=True)

    async def call() -> str:
        return await target.app.trigger_cron(name)

    task_id = target.run(call)
    if target.as_json:
        emit({"name": name, "id": task_id})
    else:
        echo(task_id)


@app_command(name="backfill")
@click.argument("name")
@click.option(
    "--from",
    "start",
    type=Moment(),
    required=True,
    help="The first moment of the range: ISO 8601 with an offset (or Z).",
)
@click.option(
    "--to", "end", type=Moment(), required=True, help="The end of the range, not included."
)
def cron_backfill(name: str, start: datetime, end: datetime, **options: Any) -> None:
    """Run now every tick of the schedule NAME in [--from, --to), oldest first, each as a
    task of its own with the tick's occurrence id: after an outage, the ticks no worker
    ran. A tick still pending from an earlier backfill, or recorded done in the run
    history, is left out, so backfilling a range again runs nothing twice. At most 10,000
    ticks a call; prints how many were scheduled."""
    target = Target.from_options(options, creates=True)
    scheduled = target.run(lambda: target.app.backfill_cron(name, start=start, end=end))
    if target.as_json:
        emit({"name": name, **times("from", start), **times("to", end), "scheduled": scheduled})
    else:
        echo(f"{name}: {scheduled} tick{'' if scheduled == 1 else 's'} scheduled")


cron.add_command(cron_list)
cron.add_command(cron_trigger)
cron.add_command(cron_backfill)
