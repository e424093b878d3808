"""``duetime history``: the runs of a task type, or of one task, that finished, newest first
(the run history: :meth:`duetime.App.history`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import click

from duetime.cli.output import echo, emit, times, when
from duetime.cli.target import Target, app_command
from duetime.features.history.runs import RunInfo
from duetime.model import MAX_HISTORY_KEEP

#: The columns of ``history``, printed first (alone when no run is kept).
RUN_HEADER = "finished\tid\toccurrence\tattempt\toutcome\tduration\tworker\terror"


@app_command(name="history")
@click.argument("task_type")
@click.argument("task_id", required=False)
@click.option(
    "--limit",
    type=click.IntRange(1, MAX_HISTORY_KEEP),
    default=50,
    show_default=True,
    help="The most runs shown, the newest.",
)
def history(task_type: str, task_id: str | None, limit: int, **options: Any) -> None:
    """The runs of TASK_TYPE that finished (of TASK_ID only, if given), newest first: when
    each ran, its occurrence and attempt, how it ended (done; failed, to be tried again;
    dead; aborted), how long it took, the worker and the error. With TASK_ID, the
    tracebacks of its failures follow. Each type keeps its last runs (1,000 and 7 days
    unless the app says otherwise)."""
    target = Target.from_options(options)

    async def call() -> list[RunInfo]:
        await target.adopt(task_type)
        return await target.app.history(task_type, task_id, limit=limit)

    runs = target.run(call)
    if target.as_json:
        emit([run_doc(run) for run in runs])
        return
    click.echo(RUN_HEADER)
    for run in runs:
        echo(run_line(run))
    if not runs:
        whose = f"{task_type}/{task_id}" if task_id else task_type
        click.echo(f"no runs of {whose} kept", err=True)
    if task_id:
        for run in runs:
            if run.traceback:
                heading = f"traceback of attempt {run.attempt}, {when(run.finished)}:"
                echo(f"{heading}\n{run.traceback.rstrip()}")


def run_doc(run: RunInfo) -> dict[str, Any]:
    """One run as ``history --json`` prints it."""
    return {
        "type": run.task_type,
        "id": run.task_id,
        "occurrence_id": run.occurrence_id,
        **times("occurrence", run.occurrence),
        "attempt": run.attempt,
        **times("started", run.started),
        **times("finished", run.finished),
        "duration_ms": _ms(run.duration),
        "outcome": run.outcome,
        "error": run.error,
        "traceback": run.traceback,
        "worker": run.worker,
        "result": run.result,
    }


def run_line(run: RunInfo) -> str:
    """One run as ``history`` prints it, in the columns of :data:`RUN_HEADER`."""
    took = _ms(run.duration)
    return (
        f"{when(run.finished)}\t{run.task_id}\t{when(run.occurrence)}\t{run.attempt}\t"
        f"{run.outcome}\t{'-' if took is None else f'{took:g} ms'}\t{run.worker or '-'}\t"
        f"{run.error or '-'}"
    )


def _ms(span: timedelta | None) -> float | None:
    return None if span is None else span / timedelta(milliseconds=1)
