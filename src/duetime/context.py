"""What a handler is told about the run it is in."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

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
        meta: the task's metadata (``meta=`` as scheduled), read-only; empty for none.
    """

    task_type: str
    task_id: str
    due: datetime
    attempt: int
    occurrence: str
    token: int
    app: Client
    meta: Mapping[str, Any] = MappingProxyType({})


#: The metadata of a task without any: one shared, read-only, empty mapping.
NO_META: Mapping[str, Any] = Context._field_defaults["meta"]
