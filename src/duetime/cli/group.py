"""The ``duetime`` command: its options, and its commands, one module per family."""

from __future__ import annotations

import logging

import click

from duetime.cli import cron, dashboard, operate, tasks, worker


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


for command in (
    worker.worker,
    tasks.schedule,
    tasks.submit,
    tasks.show,
    tasks.cancel,
    tasks.retry,
    tasks.list_tasks,
    cron.cron_list,
    operate.stats,
    operate.workers,
    dashboard.dashboard,
):
    main.add_command(command)
