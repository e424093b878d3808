"""A stored task as a listing shows it: :class:`~duetime.TaskInfo`, with what can be read
of it, why the rest cannot, and what kind of trigger it carries."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from duetime.clock import from_ms, in_range
from duetime.errors import SchemaError
from duetime.meta import shown_meta
from duetime.model import TaskInfo
from duetime.record import Record
from duetime.stores.base import StoredTask


def task_info(task_type: str, stored: StoredTask) -> TaskInfo:
    """A stored task as a listing shows it; what cannot be read shows as None, and why."""
    payload = trace = meta_json = None
    failures = unique_ms = 0
    kind, shown = "once", dict[str, Any]()
    problems = [stored.error] if stored.error else []
    if not in_range(stored.due_ms):
        problems.append("its due time is not a time (ms) of the years 1-9999")
    if stored.record is not None:
        try:
            record = Record.decode(stored.record)
        except SchemaError as exc:
            if not any(str(exc) in problem for problem in problems):
                problems.append(str(exc))
        else:
            payload, failures, trace = record.payload, record.failures, record.traceback
            unique_ms, meta_json = record.unique_ms, record.meta_json
            if record.trigger is not None:
                kind, shown = record.trigger.NAME, record.trigger.shown()
    running = stored.state == "running"
    return TaskInfo(
        task_type,
        stored.id,
        stored.state,
        from_ms(stored.due_ms) if in_range(stored.due_ms) else None,
        payload,
        shown.get("every"),
        shown.get("until"),
        failures + stored.stalls + (1 if running else 0),
        "; ".join(problems) or None,
        from_ms(stored.score_ms) if running and in_range(stored.score_ms) else None,
        kind,
        trace,
        stored.priority,
        stored.group or None,
        timedelta(milliseconds=unique_ms) if unique_ms else None,
        meta=shown_meta(meta_json),
    )
