"""What a handler is told about the run it is in."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from duetime.client import Client


class Context(NamedTuple):
    """What a handler is told about the run it is in (a named tuple: cheap to make).

    Attributes:
        task_type: the task type.
        task_id: the task's id.
        due: when this occurrence was due (retries keep it).
        attempt: 1 on the first run of this occurrence, then 2, 3, ...
        occurrence: a stable id of this occurrence, ``"<task id>@<due ms>"``: the same on
            every attempt and on every worker, so handlers can use it to make their side
            effects idempotent.
        token: the fencing token of this claim; later claims of the task get larger ones.
        app: the app, for scheduling more tasks from an async handler.
    """

    task_type: str
    task_id: str
    due: datetime
    attempt: int
    occurrence: str
    token: int
    app: Client
