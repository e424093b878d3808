"""``duetime pause`` and ``duetime resume``: stop and start a task type on every worker of
the store (the pause is kept in the store)."""

from __future__ import annotations

from typing import Any

import click

from duetime.cli.output import echo, emit
from duetime.cli.target import Target, app_command


def _set(task_type: str, paused: bool, options: dict[str, Any]) -> None:
    target = Target.from_options(options, creates=True)

    async def call() -> bool:
        await target.adopt(task_type)
        app = target.app
        return await (app.pause(task_type) if paused else app.resume(task_type))

    changed = target.run(call)
    if target.as_json:
        emit({"type": task_type, "paused": paused, "changed": changed})
        return
    state = "paused" if paused else "resumed"
    echo(f"{task_type} {state}" if changed else f"{task_type} was {state} already")


@app_command()
@click.argument("task_type")
def pause(task_type: str, **options: Any) -> None:
    """Pause TASK_TYPE on every worker: within a second none starts its tasks, until
    ``duetime resume``. Handlers running finish; due tasks wait (no attempt counted); the
    pause outlives restarts."""
    _set(task_type, True, options)


@app_command()
@click.argument("task_type")
def resume(task_type: str, **options: Any) -> None:
    """Resume a paused TASK_TYPE: workers start its due tasks again within a second."""
    _set(task_type, False, options)
