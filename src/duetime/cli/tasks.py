"""The commands on the tasks in the store: ``show``, ``cancel``, ``abort``, ``retry``,
``run-now`` and ``ls``; ``cancel --all`` and ``retry --all`` act on every task of a type in a
state. Writing tasks (``schedule``, ``submit``) is :mod:`duetime.cli.producing`'s."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

import click

from duetime.admin import bulk
from duetime.calls.aborts import AbortStatus
from duetime.cli.output import (
    TASK_HEADER,
    echo,
    emit,
    no_task,
    progress_bar,
    task_doc,
    task_line,
    times,
    when,
)
from duetime.cli.target import Target, app_command, warn_invalid
from duetime.cli.values import MAX_COUNT
from duetime.errors import BulkIncomplete
from duetime.model import TaskInfo
from duetime.stores.base import STATES, State


@app_command()
@click.argument("task_type")
@click.argument("task_id")
def show(task_type: str, task_id: str, **options: Any) -> None:
    """Show one task with its payload (as JSON), the result of its last finished run (when
    its type keeps a history), and after a failure its traceback (exit code 3 when there is
    none)."""
    target = Target.from_options(options)

    async def call() -> TaskInfo | None:
        await target.adopt(task_type)
        return await target.app.get(task_type, task_id)

    info = target.run(call)
    if info is None:
        raise no_task(task_type, task_id, target.given)
    doc = {**task_doc(info), "result": info.result}
    if target.as_json:
        emit(doc)
        return
    # For people: the traceback as its lines, after the document, not as one JSON string.
    trace = doc.pop("traceback")
    emit(doc, indent=2)
    if trace:
        echo(f"traceback of the last failed attempt:\n{trace.rstrip()}")


@app_command()
@click.argument("task_type")
@click.argument("task_id", required=False)
@click.option("--all", "every", is_flag=True, help="Cancel every task of the type in --state.")
@click.option("--state", type=click.Choice(STATES), help="With --all: the state to empty.")
def cancel(
    task_type: str, task_id: str | None, every: bool, state: str | None, **options: Any
) -> None:
    """Cancel a task, whatever its state; or with --all, every task of the type in --state
    (running handlers finish, but their tasks are neither retried nor rescheduled)."""
    if every and not state:
        raise click.UsageError("--all needs --state due, running or dead")
    _one_or_all(task_id, every, state)
    target = Target.from_options(options)
    if task_id is None:
        return _bulk(target, task_type, "cancel", state)  # type: ignore[arg-type]

    async def call() -> bool:
        await target.adopt(task_type)
        return await target.app.cancel(task_type, task_id)

    if not target.run(call):
        raise no_task(task_type, task_id, target.given)
    if target.as_json:
        emit({"type": task_type, "id": task_id, "cancelled": True})
    else:
        echo(f"cancelled {task_type}/{task_id}")


#: What ``abort`` says after the status, for people.
ABORT_SAID: dict[AbortStatus, str] = {
    "aborted": "its worker cancels the running handler",
    "not_interruptible": "a plain def handler runs on in its thread; its result is discarded",
    "cancelled": "it was not running",
}


@app_command()
@click.argument("task_type")
@click.argument("task_id")
def abort(task_type: str, task_id: str, **options: Any) -> None:
    """Abort a task's running handler, on whichever worker runs it (an async handler gets
    CancelledError and the worker's grace to clean up; the run is not retried); cancel the
    task if it is not running. Prints the status: aborted, not_interruptible (a plain def
    handler runs on, its result discarded) or cancelled; exit code 3 when there is no task."""
    target = Target.from_options(options)

    async def call() -> AbortStatus:
        await target.adopt(task_type)
        return await target.app.abort(task_type, task_id)

    status = target.run(call)
    if status == "not_found":
        raise no_task(task_type, task_id, target.given)
    if target.as_json:
        emit({"type": task_type, "id": task_id, "status": status})
    else:
        echo(f"{status} {task_type}/{task_id}: {ABORT_SAID[status]}")


@app_command()
@click.argument("task_type")
@click.argument("task_id", required=False)
@click.option("--all", "every", is_flag=True, help="Retry every dead task of the type.")
def retry(task_type: str, task_id: str | None, every: bool, **options: Any) -> None:
    """Run a dead task again, now; or with --all, every dead task of the type."""
    _one_or_all(task_id, every, None)
    target = Target.from_options(options)
    if task_id is None:
        return _bulk(target, task_type, "retry", "dead")

    async def call() -> datetime:
        await target.adopt(task_type)
        return await target.app.retry(task_type, task_id)

    due = target.run(call)
    if target.as_json:
        emit({"type": task_type, "id": task_id, **times("due", due)})
    else:
        echo(f"{task_type}/{task_id} due again {when(due)}")


@app_command(name="run-now")
@click.argument("task_type")
@click.argument("task_id")
def run_now(task_type: str, task_id: str, **options: Any) -> None:
    """Run a waiting task now: a one-off task is due now; a periodic task's (or a cron
    schedule's) next occurrence runs now, and the ones after it keep their times (exit code
    3 when no task of this id waits)."""
    target = Target.from_options(options)

    async def call() -> datetime:
        await target.adopt(task_type)
        return await target.app.run_now(task_type, task_id)

    due = target.run(call)
    if target.as_json:
        emit({"type": task_type, "id": task_id, **times("due", due)})
    else:
        echo(f"{task_type}/{task_id} due {when(due)}")


def _one_or_all(task_id: str | None, every: bool, state: str | None) -> None:
    if every == (task_id is not None):
        raise click.UsageError("give a TASK_ID or --all, not both" if every else "missing TASK_ID")
    if state and not every:
        raise click.UsageError("--state goes with --all")


def _bulk(target: Target, task_type: str, action: str, state: State) -> None:
    """``retry --all`` and ``cancel --all``: a progress bar on long runs, then the count; the
    tasks it could not act on are named, and make the exit code 1."""
    with progress_bar(f"{action} {task_type} ({state})", quiet=target.as_json) as progress:

        async def call() -> tuple[int, dict[str, str]]:
            await target.adopt(task_type)
            try:
                if action == "retry":
                    return await bulk.retry_all(target.app, task_type, progress=progress), {}
                return await bulk.cancel_all(target.app, task_type, state, progress=progress), {}
            except BulkIncomplete as exc:
                return exc.done, exc.failed

        done, failed = target.run(call)
    verb = "retried" if action == "retry" else "cancelled"
    if target.as_json:
        doc: dict[str, Any] = {"type": task_type, "state": state, "action": action, "count": done}
        if failed:
            doc["failed"] = [{"id": task_id, "error": why} for task_id, why in failed.items()]
        emit(doc)
    else:
        echo(f"{verb} {done} {state} {task_type} task{'s' if done != 1 else ''}")
    if failed:
        for task_id, why in failed.items():  # repr: an id may hold anything
            click.echo(f"not {verb}: {task_id!r}: {why}", err=True)
        raise click.ClickException(f"{len(failed)} {state} {task_type} tasks could not be {verb}")


@app_command(name="ls")
@click.argument("task_type", required=False)
@click.option(
    "--state",
    type=click.Choice([*STATES, "all"]),
    default="due",
    show_default=True,
    help="The state to list; all: due, then running, then dead.",
)
@click.option("--limit", type=click.IntRange(1, MAX_COUNT), default=50, show_default=True)
def list_tasks(task_type: str | None, state: str, limit: int, **options: Any) -> None:
    """List tasks of one type (or of every type: the app's, or with --url those the store
    holds) in a state, earliest first: at most --limit per type and state."""
    target = Target.from_options(options)
    states = STATES if state == "all" else (cast(State, state),)

    async def collect() -> tuple[list[TaskInfo], set[str]]:
        if task_type:
            await target.adopt(task_type)
            names = [task_type]
        else:
            found = await target.all_types()
            warn_invalid(found.invalid)
            names = found.names
        listed = [
            t for name in names for s in states for t in await target.app.list(name, s, limit=limit)
        ]
        return listed, await target.app.paused()

    rows, paused = target.run(collect)
    if target.as_json:
        emit([{**task_doc(info), "paused": info.task_type in paused} for info in rows])
        return
    click.echo(TASK_HEADER)
    for info in rows:
        echo(task_line(info, paused=info.task_type in paused))
    if not rows:
        what = "tasks" if state == "all" else f"{state} tasks"
        click.echo(f"no {what}" + (f" of {task_type}" if task_type else ""), err=True)
    listed = {task_type} if task_type else {info.task_type for info in rows}
    for name in sorted(paused & listed):
        click.echo(f"{name} is paused: its due tasks wait for `duetime resume {name}`", err=True)
