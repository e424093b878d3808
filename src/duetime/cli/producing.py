"""The commands that write a task: ``schedule`` (or move one) and ``submit`` (a new one under
an id duetime picks), with the options that say when it is due and what it carries, and the
warning when no worker runs on the store."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import click

from duetime.app import App
from duetime.cli.output import echo, emit, times, when
from duetime.cli.target import Target, app_command
from duetime.cli.values import CalendarSpan, JsonObject, Moment, Seconds
from duetime.errors import DuetimeError, ValidationError
from duetime.features.telemetry.presence import seen_since
from duetime.interval import CalendarInterval
from duetime.stores import shown_url

#: How recently a worker must have run on the store for ``schedule`` and ``submit`` not to
#: warn: a minute, four times the lapse of a live worker's heartbeat.
SEEN_WITHIN_MS = 60_000


def task_options(command: Callable[..., None]) -> Callable[..., None]:
    """The options that describe when a task is due and what it carries."""
    for option in reversed(
        (
            click.option(
                "--at", type=Moment(), help="When it is due: ISO 8601 with an offset (or Z)."
            ),
            click.option(
                "--delay",
                type=Seconds(),
                help="How long from now (by the store's clock): 90, 90s, 5m, 2h, 1d or PT5M.",
            ),
            click.option(
                "--payload",
                type=JsonObject(),
                default="{}",
                show_default=True,
                help="A JSON object.",
            ),
            click.option(
                "--meta",
                type=JsonObject(),
                help="Metadata for the code around the handler: a JSON object, at most 4 KiB.",
            ),
            click.option(
                "--every",
                type=Seconds(),
                help="Make it periodic: the time between occurrences (a duration, as --delay).",
            ),
            click.option(
                "--every-calendar",
                type=CalendarSpan(),
                help="Make it periodic in calendar units: 7d, 2w, 1mo, 1y; each occurrence at "
                "the first one's wall-clock time in --tz (across daylight saving time).",
            ),
            click.option(
                "--tz",
                default="UTC",
                show_default=True,
                help="The IANA time zone of --every-calendar, e.g. Europe/Madrid.",
            ),
            click.option(
                "--until",
                type=Moment(),
                help="The last time an occurrence may be due (ISO 8601, as --at).",
            ),
        )
    ):
        command = option(command)
    return command


def task_fields(
    at: datetime | None,
    delay: float | None,
    payload: dict[str, Any],
    meta: dict[str, Any] | None,
    every: float | None,
    every_calendar: dict[str, int] | None,
    tz: str,
    until: datetime | None,
) -> dict[str, Any]:
    """The keyword arguments of App.schedule and App.submit, from the task options (each
    checked by its type in :mod:`duetime.cli.values`).

    Raises:
        click.UsageError: both --every and --every-calendar, or a calendar step the App
            refuses (zero, days with months, an unknown zone).
    """
    if every is not None and every_calendar is not None:
        raise click.UsageError("give --every or --every-calendar, not both")
    period: timedelta | CalendarInterval | None = None
    if every is not None:
        period = timedelta(seconds=every)
    elif every_calendar is not None:
        try:
            period = CalendarInterval(**every_calendar, tz=tz)
        except ValidationError as exc:
            option = "--tz" if exc.field == "tz" else "--every-calendar"
            raise click.BadParameter(exc.problem, param_hint=option) from None
    fields = {"at": at, "delay": delay, "payload": payload, "every": period, "until": until}
    return {**fields, "meta": meta}


async def worker_seen(app: App, task_type: str) -> bool:
    """Whether a worker running ``task_type`` ran on the app's store and namespace in the
    last minute (one read); True when the store cannot tell, so that asking never fails a
    command."""
    try:
        store = await app.open()
        return await seen_since(store, await app.now_ms() - SEEN_WITHIN_MS, task_type)
    except DuetimeError:
        return True


def warn_no_worker(app: App, task_type: str) -> None:
    """Say on stderr that no worker of ``task_type`` ran on the app's store lately: the task
    may wait long, and the most common reasons are a worker on another store (a relative
    SQLite path from another working directory), so the store is named in full, and
    workers of other types only (``--type``)."""
    where = shown_url(app.url)
    if app.namespace != "default":
        where += f" (namespace {app.namespace})"
    click.echo(
        f"warning: no worker of {task_type} has run on {where} in the last minute: is one "
        "running on this store?",
        err=True,
    )


@app_command()
@click.argument("task_type")
@click.argument("task_id")
@task_options
@click.option(
    "--if-exists",
    type=click.Choice(["replace", "keep", "merge"]),
    default="replace",
    show_default=True,
    help="When a task with the id is pending: replace it, keep it as it is, or merge the "
    "payload into its payload (moving it only with --at or --delay).",
)
@click.option(
    "--unique-for",
    type=Seconds(),
    help="Schedule nothing when a run of it finished less than this long ago (a duration, "
    "as --delay).",
)
@click.option(
    "--priority",
    type=int,
    help="-100 to 100: among the type's due tasks, higher is claimed first (default: the "
    "type's, 0 unless it says).",
)
@click.option(
    "--group",
    help="The group the task belongs to: the type's group limits hold each group apart.",
)
def schedule(
    task_type: str,
    task_id: str,
    if_exists: str,
    unique_for: float | None,
    priority: int | None,
    group: str | None,
    **options: Any,
) -> None:
    """Schedule (or move) a task."""
    target = Target.from_options(options, creates=True)
    fields = task_fields(**options)
    fields["if_exists"] = if_exists
    fields["priority"] = priority
    fields["group"] = group
    if unique_for is not None:
        fields["unique_for"] = timedelta(seconds=unique_for)

    async def call() -> tuple[datetime | None, bool]:
        await target.adopt(task_type)
        due = await target.app.schedule(task_type, task_id, **fields)
        return due, await worker_seen(target.app, task_type)

    due, seen = target.run(call)
    if target.as_json:
        emit({"type": task_type, "id": task_id, **times("due", due)})
    elif due is None:
        echo(f"{task_type}/{task_id} not scheduled: a run of it finished within --unique-for")
    else:
        echo(f"{task_type}/{task_id} due {when(due)}")
    if not seen:
        warn_no_worker(target.app, task_type)


@app_command()
@click.argument("task_type")
@task_options
def submit(task_type: str, **options: Any) -> None:
    """Schedule a new task under an id duetime picks; print the id."""
    target = Target.from_options(options, creates=True)
    fields = task_fields(**options)

    async def call() -> tuple[str, bool]:
        await target.adopt(task_type)
        task_id = await target.app.submit(task_type, **fields)
        return task_id, await worker_seen(target.app, task_type)

    task_id, seen = target.run(call)
    if target.as_json:
        emit({"type": task_type, "id": task_id})
    else:
        echo(task_id)
    if not seen:
        warn_no_worker(target.app, task_type)
