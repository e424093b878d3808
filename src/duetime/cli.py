"""The ``duetime`` command: run a worker, and look at or change tasks from a shell."""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import click

from duetime.app import App
from duetime.errors import DuetimeError
from duetime.model import TaskInfo
from duetime.stores.base import STATES, State

T = TypeVar("T")


def load_app(target: str) -> App:
    """The App named by ``module:attribute``, imported from the working directory.

    This is the one place duetime imports code by name, and the name comes from the
    command line, never from stored data.
    """
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise click.BadParameter(f"{target!r}: expected module:attribute, e.g. myproject.tasks:app")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise click.BadParameter(f"cannot import {module_name!r}: {exc}") from None
    app = getattr(module, attribute, None)
    if not isinstance(app, App):
        raise click.BadParameter(f"{target!r} is not a duetime.App")
    return app


def _run(app: App, call: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        try:
            return await call()
        finally:
            await app.close()

    try:
        return asyncio.run(main())
    except DuetimeError as exc:
        raise click.ClickException(str(exc)) from None


def echo(text: str) -> None:
    """Print a line; text read from the store that UTF-8 cannot carry (an id or error with
    bytes that are not UTF-8) is written with escapes rather than failing the command."""
    click.echo(text.encode("utf-8", "backslashreplace").decode())


def _when(moment: datetime | None) -> str:
    return "-" if moment is None else moment.astimezone(UTC).isoformat(timespec="milliseconds")


def _row(info: TaskInfo) -> str:
    error = f"  error: {info.error}" if info.error else ""
    return f"{info.task_id}\t{info.state}\t{_when(info.due)}\tattempts {info.attempts}{error}"


app_argument = click.argument("app_path", metavar="MODULE:APP")


def task_arguments(command: Callable[..., None]) -> Callable[..., None]:
    """MODULE:APP TASK_TYPE TASK_ID, the arguments of the commands about one task."""
    for argument in reversed(
        (app_argument, click.argument("task_type"), click.argument("task_id"))
    ):
        command = argument(command)
    return command


@click.group()
@click.option(
    "--log-level",
    default="INFO",
    show_default=True,
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
)
def main(log_level: str) -> None:
    """duetime: run work at the moment it is due."""
    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


@main.command()
@app_argument
@click.option("--type", "types", multiple=True, help="Run only these task types (repeatable).")
@click.option(
    "--grace",
    default=30.0,
    show_default=True,
    help="Seconds running handlers get to finish after SIGTERM or SIGINT.",
)
@click.option(
    "--no-gc-tuning",
    is_flag=True,
    help="Leave Python's garbage collector as it is (by default the worker freezes its "
    "start-up objects and collects young objects every 10,000 allocations).",
)
@click.option(
    "--metrics",
    "metrics_port",
    type=click.IntRange(0, 65535),
    metavar="PORT",
    help="Serve Prometheus metrics on this port (needs duetime[metrics]).",
)
@click.option(
    "--metrics-host",
    default="127.0.0.1",
    show_default=True,
    help="The interface to serve metrics on.",
)
def worker(
    app_path: str,
    types: tuple[str, ...],
    grace: float,
    no_gc_tuning: bool,
    metrics_port: int | None,
    metrics_host: str,
) -> None:
    """Run a worker for every task type of MODULE:APP until SIGTERM or SIGINT."""
    app = load_app(app_path)
    try:
        app.run(
            list(types) or None,
            grace=grace,
            gc_tuning=not no_gc_tuning,
            metrics_port=metrics_port,
            metrics_host=metrics_host,
        )
    except DuetimeError as exc:
        raise click.ClickException(str(exc)) from None


def task_options(command: Callable[..., None]) -> Callable[..., None]:
    """The options that describe when a task is due and what it carries."""
    for option in reversed(
        (
            click.option("--at", "at", help="When it is due: an ISO 8601 time with an offset."),
            click.option("--delay", type=float, help="Seconds from now (by the store's clock)."),
            click.option("--payload", default="{}", show_default=True, help="A JSON object."),
            click.option(
                "--every", type=float, help="Make it periodic: seconds between occurrences."
            ),
            click.option(
                "--until", "until", help="The last time an occurrence may be due (ISO 8601)."
            ),
        )
    ):
        command = option(command)
    return command


def task_fields(
    at: str | None, delay: float | None, payload: str, every: float | None, until: str | None
) -> dict[str, Any]:
    """The keyword arguments of App.schedule and App.submit, from the task options."""
    try:
        return {
            "at": datetime.fromisoformat(at) if at else None,
            "delay": delay,
            "payload": json.loads(payload),
            "every": None if every is None else timedelta(seconds=every),
            "until": datetime.fromisoformat(until) if until else None,
        }
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@main.command()
@app_argument
@click.argument("task_type")
@click.argument("task_id")
@task_options
def schedule(app_path: str, task_type: str, task_id: str, **options: Any) -> None:
    """Schedule (or move) a task."""
    app = load_app(app_path)
    fields = task_fields(**options)
    due = _run(app, lambda: app.schedule(task_type, task_id, **fields))
    echo(f"{task_type}/{task_id} due {_when(due)}")


@main.command()
@app_argument
@click.argument("task_type")
@task_options
def submit(app_path: str, task_type: str, **options: Any) -> None:
    """Schedule a new task under an id duetime picks; print the id."""
    app = load_app(app_path)
    fields = task_fields(**options)
    echo(_run(app, lambda: app.submit(task_type, **fields)))


@main.command(name="ls")
@app_argument
@click.argument("task_type", required=False)
@click.option("--state", type=click.Choice(STATES), default="due", show_default=True)
@click.option("--limit", default=50, show_default=True)
def list_tasks(app_path: str, task_type: str | None, state: str, limit: int) -> None:
    """List tasks of one type (or of every type the app knows) in a state, earliest first."""
    app = load_app(app_path)
    names = [task_type] if task_type else sorted(app.types)

    async def collect() -> list[tuple[str, list[TaskInfo]]]:
        return [(name, await app.list(name, state, limit=limit)) for name in names]  # type: ignore[arg-type]

    for name, rows in _run(app, collect):
        for info in rows:
            echo(f"{name}\t{_row(info)}")


@main.command()
@app_argument
def stats(app_path: str) -> None:
    """How many tasks of each type are due, running and dead."""
    app = load_app(app_path)

    async def collect() -> list[tuple[str, dict[State, int]]]:
        return [(name, await app.counts(name)) for name in sorted(app.types)]

    click.echo("type\tdue\trunning\tdead")
    for name, counts in _run(app, collect):
        click.echo(f"{name}\t{counts['due']}\t{counts['running']}\t{counts['dead']}")


@main.command()
@task_arguments
def show(app_path: str, task_type: str, task_id: str) -> None:
    """Show one task with its payload."""
    app = load_app(app_path)
    info = _run(app, lambda: app.get(task_type, task_id))
    if info is None:
        raise click.ClickException(f"no task {task_type}/{task_id}")
    doc: dict[str, Any] = {
        "type": info.task_type,
        "id": info.task_id,
        "state": info.state,
        "due": _when(info.due),
        "attempts": info.attempts,
        "error": info.error,
        "every_s": None if info.every is None else info.every.total_seconds(),
        "until": None if info.until is None else _when(info.until),
        "lease_expires": None if info.lease_expires is None else _when(info.lease_expires),
        "payload": info.payload,
    }
    echo(json.dumps(doc, indent=2, ensure_ascii=False))


@main.command()
@task_arguments
def cancel(app_path: str, task_type: str, task_id: str) -> None:
    """Cancel a task, whatever its state."""
    app = load_app(app_path)
    if not _run(app, lambda: app.cancel(task_type, task_id)):
        raise click.ClickException(f"no task {task_type}/{task_id}")
    echo(f"cancelled {task_type}/{task_id}")


@main.command()
@task_arguments
def retry(app_path: str, task_type: str, task_id: str) -> None:
    """Run a dead task again, now."""
    app = load_app(app_path)
    due = _run(app, lambda: app.retry(task_type, task_id))
    echo(f"{task_type}/{task_id} due again {_when(due)}")


@main.command(name="cron")
@app_argument
@click.option("--next", "count", default=3, show_default=True, help="Next run times to show.")
def cron_list(app_path: str, count: int) -> None:
    """List cron schedules with their next run times."""
    app = load_app(app_path)

    async def collect() -> list[tuple[Any, list[datetime]]]:
        rows = []
        for info in await app.crons():
            upcoming = [] if info.paused else await app.next_runs(info.name, count)
            rows.append((info, upcoming))
        return rows

    for info, upcoming in _run(app, collect):
        state = (
            "paused"
            if info.paused
            else ("declared, not yet stored" if not info.stored else "active")
        )
        echo(
            f"{info.name}\t{info.task_type}\t{info.expression} ({info.tz})\t{state}\t"
            f"missed={info.missed} overlap={info.overlap}\t"
            f"missed {info.missed_count}, skipped {info.skipped_count}"
        )
        for moment in upcoming:
            click.echo(f"    next: {moment.isoformat()}")


if __name__ == "__main__":  # pragma: no cover
    main()
