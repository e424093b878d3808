"""What the ``duetime`` command prints: text lines for people, one JSON document for scripts
(``--json``), the progress bar of bulk runs, and the exit codes."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shlex
import sys
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import click

from duetime.clock import epoch_ms
from duetime.features.cron.manage import CronInfo
from duetime.interval import CalendarInterval
from duetime.model import TaskInfo

#: Exit codes: the command did what was asked; it failed (the store cannot be reached, or
#: refused); it was called wrong (click's usage errors, a bad MODULE:APP, URL or option
#: value, a task type the app does not know); what it names does not exist.
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_FOUND = 0, 1, 2, 3
#: Bulk runs show a progress bar from this many tasks (a shorter run ends before it shows).
PROGRESS_FROM = 1000


class BadUsage(click.ClickException):
    """Input refused (a bad option value, an unknown task type): exit code 2."""

    exit_code = EXIT_USAGE


class NotFoundExit(click.ClickException):
    """The task or schedule named does not exist: exit code 3."""

    exit_code = EXIT_NOT_FOUND


def echo(text: str) -> None:
    """Print a line; text read from the store that UTF-8 cannot carry (an id or error with
    bytes that are not UTF-8) is written with escapes rather than failing the command (in a
    JSON document, the escape is JSON's own ``\\udcff``)."""
    click.echo(text.encode("utf-8", "backslashreplace").decode())


def emit(doc: Any, *, indent: int | None = None) -> None:
    """Print ``doc`` as one JSON document."""
    echo(json.dumps(doc, ensure_ascii=False, indent=indent))


def when(moment: datetime | None) -> str:
    """An ISO 8601 UTC time with milliseconds, or ``-``."""
    return "-" if moment is None else moment.astimezone(UTC).isoformat(timespec="milliseconds")


def times(name: str, moment: datetime | None) -> dict[str, Any]:
    """``{name: ISO 8601 UTC, name_ms: epoch ms}``, both None for no time."""
    if moment is None:
        return {name: None, f"{name}_ms": None}
    return {name: when(moment), f"{name}_ms": epoch_ms(moment)}


def _seconds(span: object) -> float | None:
    return span.total_seconds() if isinstance(span, timedelta) else None


def _calendar(span: object) -> dict[str, Any] | None:
    return dataclasses.asdict(span) if isinstance(span, CalendarInterval) else None


def task_doc(info: TaskInfo) -> dict[str, Any]:
    """One task as ``show`` and ``ls --json`` print it."""
    return {
        "type": info.task_type,
        "id": info.task_id,
        "state": info.state,
        **times("due", info.due),
        "attempts": info.attempts,
        "priority": info.priority,
        "group": info.group,
        "unique_for_s": None if info.unique_for is None else info.unique_for.total_seconds(),
        "error": info.error,
        "every_s": _seconds(info.every),
        "every_calendar": _calendar(info.every),
        **times("until", info.until),
        **times("lease_expires", info.lease_expires),
        "payload": info.payload,
        "meta": dict(info.meta),
        "traceback": info.traceback,
    }


#: The columns of ``ls``, printed first (alone when nothing is listed).
TASK_HEADER = "type\tid\tstate\tdue\tattempts\tpriority\terror"
#: What happens to a task that ends: said wherever a task is looked for and not found.
NOT_KEPT = "a finished task is not kept"


def task_line(info: TaskInfo, *, paused: bool = False) -> str:
    """One task as ``ls`` prints it, in the columns of :data:`TASK_HEADER`; a due task of a
    ``paused`` type shows as ``due (paused)``: it waits for a resume."""
    state = "due (paused)" if paused and info.state == "due" else info.state
    return (
        f"{info.task_type}\t{info.task_id}\t{state}\t{when(info.due)}\t"
        f"{info.attempts}\t{info.priority}\t{info.error or '-'}"
    )


def no_task(task_type: str, task_id: str, given: Sequence[str] = ()) -> NotFoundExit:
    """The error for a task that is not in the store (exit code 3): a finished one is in
    the run history, which the command suggested shows when pasted (it carries ``given``,
    the app or store named on the command line, already quoted)."""
    where = "".join(f"{arg} " for arg in given)
    return NotFoundExit(
        f"no task {task_type}/{task_id}: not due, running or dead ({NOT_KEPT}; its runs "
        f"are: duetime history {where}{shlex.quote(task_type)} {shlex.quote(task_id)})"
    )


def cron_state(info: CronInfo) -> str:
    """``paused``, ``finished`` (past its end or limit), ``active``, or ``declared, not
    yet stored``."""
    if info.paused:
        return "paused"
    if info.finished:
        return "finished"
    return "active" if info.stored else "declared, not yet stored"


def cron_doc(info: CronInfo, upcoming: list[datetime]) -> dict[str, Any]:
    """One cron schedule as ``cron --json`` prints it."""
    return {
        "name": info.name,
        "type": info.task_type,
        "expression": info.expression,
        "tz": info.tz,
        "state": cron_state(info),
        "paused": info.paused,
        "stored": info.stored,
        "missed": info.missed,
        "overlap": info.overlap,
        "missed_count": info.missed_count,
        "skipped_count": info.skipped_count,
        "finished": info.finished,
        **times("start", info.start),
        **times("end", info.end),
        "limit": info.limit,
        "run_count": info.run_count,
        "grace_s": info.grace.total_seconds(),
        "payload": info.payload,
        "next": [when(m) for m in upcoming],
        "next_ms": [epoch_ms(m) for m in upcoming],
    }


def cron_lines(info: CronInfo, upcoming: list[datetime]) -> Iterator[str]:
    """One cron schedule as ``cron`` prints it: a line, then one per next run."""
    bounds = "".join(
        f" {label}={value}"
        for label, value in (
            ("start", info.start and info.start.isoformat()),
            ("end", info.end and info.end.isoformat()),
            ("limit", info.limit),
        )
        if value is not None
    )
    yield (
        f"{info.name}\t{info.task_type}\t{info.expression} ({info.tz})\t{cron_state(info)}\t"
        f"missed={info.missed} overlap={info.overlap}{bounds}\t"
        f"missed {info.missed_count}, skipped {info.skipped_count}, ran {info.run_count}"
    )
    for moment in upcoming:
        yield f"    next: {moment.isoformat()}"


@contextlib.contextmanager
def progress_bar(label: str, *, quiet: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A progress callback for :mod:`duetime.admin.bulk` that draws a bar (rich) once a run has
    :data:`PROGRESS_FROM` tasks, when stdout is a terminal and not ``quiet``; else None.
    The bar goes when the run ends, leaving the line the command prints."""
    if quiet or not sys.stdout.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=True,
    )
    task = bar.add_task(label, total=None)

    def update(done: int, total: int) -> None:
        if total >= PROGRESS_FROM and not bar.live.is_started:
            bar.start()
        bar.update(task, completed=done, total=total)

    try:
        yield update
    finally:
        bar.stop()
