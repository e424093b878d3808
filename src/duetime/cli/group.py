"""The ``duetime`` command: its options, and its commands, one module per family."""

from __future__ import annotations

import logging

import click

from duetime.cli import cron, dashboard, flow, history, operate, producing, tasks, worker
from duetime.version import VERSION

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def set_log_level(level: str) -> None:
    """Log at ``level`` and above, to stderr."""
    logging.basicConfig(level=level.upper(), format=LOG_FORMAT)
    # basicConfig does nothing once the root logger has a handler: the level given after
    # the command (``duetime ls --log-level debug``) comes second, and must still count.
    logging.getLogger().setLevel(level.upper())


def _level_after_command(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        set_log_level(value)


def log_level_option() -> click.Option:
    """``--log-level`` as every command takes it, after its name; given there, it wins over
    the one given before the command."""
    return click.Option(
        ["--log-level"],
        type=click.Choice(LEVELS, case_sensitive=False),
        expose_value=False,
        callback=_level_after_command,
        help="DEBUG, INFO, WARNING or ERROR (also taken before the command).",
    )


@click.group()
@click.version_option(VERSION, "--version", prog_name="duetime", message="%(prog)s %(version)s")
@click.option(
    "--log-level",
    default="INFO",
    show_default=True,
    type=click.Choice(LEVELS, case_sensitive=False),
)
def main(log_level: str) -> None:
    """duetime: run work at the moment it is due."""
    set_log_level(log_level)


for command in (
    worker.worker,
    producing.schedule,
    producing.submit,
    tasks.show,
    tasks.cancel,
    tasks.abort,
    tasks.retry,
    tasks.run_now,
    tasks.list_tasks,
    history.history,
    cron.cron,
    flow.pause,
    flow.resume,
    operate.stats,
    operate.workers,
    dashboard.dashboard,
):
    command.params.append(log_level_option())
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            sub.params.append(log_level_option())
    main.add_command(command)
