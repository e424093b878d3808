"""The last finished run of a task, read from the run history, and its result."""

from __future__ import annotations

import json
from typing import Any

from duetime.errors import TaskFailed
from duetime.stores.base import Store
from duetime.stores.capabilities import RUN_HISTORY, use
from duetime.stores.runs import StoredRun

#: Runs of a task read to find its last finished one (done or dead): the attempts that
#: failed and were tried again, and the aborted ones, come between.
SCANNED = 100

#: How a run that finished its task ended.
FINISHED = ("done", "dead")


async def last_finished(store: Store, task_type: str, task_id: str) -> StoredRun | None:
    """The task's newest run that ended done or dead, or None."""
    runs = await use(store, RUN_HISTORY).runs(task_type, task_id=task_id, limit=SCANNED)
    return next((run for run in runs if run.outcome in FINISHED), None)


def result_of(task_type: str, run: StoredRun) -> Any:
    """What the run's handler returned (None for nothing).

    Raises:
        TaskFailed: the run ended dead.
    """
    if run.outcome == "dead":
        raise TaskFailed(task_type, run.task_id, run.error, run.trace)
    return None if run.result is None else json.loads(run.result)
