"""``duetime cron``: the cron schedules with their next run times; ``duetime cron backfill``
runs the ticks of a past range."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click

from duetime.cli.output import cron_doc, cron_lines, echo, emit, times
from duetime.cli.target import Target, app_command
from duetime.cli.values import MAX_NEXT_RUNS, Moment
from duetime.errors import ScheduleNotFound
from duetime.features.cron.manage import CronInfo

#: Where the cron group keeps, in its context, the arguments of a listing.
_LISTED = "duetime.cron.listed"


class CronGroup(click.Group):
    """``duetime cron [NAME]`` lists the schedules (the listing is the group's default
    command: a first argument that names no subcommand is the listing's), and
    ``duetime cron SUBCOMMAND ...`` acts on one."""

    def __init__(self, listing: click.Command, **attrs: Any) -> None:
        super().__init__(
            name=listing.name,
            help=listing.help,
            context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
            invoke_without_command=True,
            **attrs,
        )
        self.listing = listing

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ordered = self._subcommand(args)
        if ordered is None:  # the listing, with every argument it was given
            ctx.meta[_LISTED] = args
            return []
        return super().parse_args(ctx, ordered)

    def _subcommand(self, args: list[str]) -> list[str] | None:
        """``args`` with the subcommand first, or None for the listing: a first argument
        holding a colon (MODULE:APP) may come before the subcommand's name."""
        rest = args[1:] if args and ":" in args[0] else args
        if rest and rest[0] in self.commands:
            return [rest[0], *args[: len(args) - len(rest)], *rest[1:]]
        return None

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        # The listing's usage (its options: ``duetime cron --help``), or a subcommand's.
        return ["[MODULE:APP]", "[OPTIONS]", "[NAME]", "|", "COMMAND", "[ARGS]..."]

    def invoke(self, ctx: click.Context) -> Any:
        listed = ctx.meta.pop(_LISTED, None)
        if listed is not None:
            return self.listing.main(listed, prog_name=ctx.command_path, standalone_mode=False)
        return super().invoke(ctx)


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
    """List cron schedules with their next run times (--next, default 3); or only the
    schedule NAME (exit code 3 when there is none); the options are those of the other
    commands that work on an app or a URL. ``duetime cron backfill NAME`` runs the ticks of
    a past range."""
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
def backfill(name: str, start: datetime, end: datetime, **options: Any) -> None:
    """Run now every tick of the schedule NAME in [--from, --to), oldest first, each as a
    task of its own with the tick's occurrence id: after an outage, the ticks no worker
    ran. A tick still pending from an earlier backfill, or recorded done in the run
    history, is left out, so backfilling a range again runs nothing twice. At most 10,000
    ticks a call."""
    target = Target.from_options(options)
    scheduled = target.run(lambda: target.app.backfill_cron(name, start=start, end=end))
    if target.as_json:
        emit({"name": name, **times("from", start), **times("to", end), "scheduled": scheduled})
    else:
        echo(f"{name}: {scheduled} tick{'' if scheduled == 1 else 's'} scheduled")


cron = CronGroup(cron_list)
cron.add_command(backfill)
