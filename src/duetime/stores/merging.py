"""The record a merge (``if_exists="merge"``) writes over a pending task: the one rule every
store applies, in the atomic step of its write (the SQL stores call it in their
transaction, with the task's row locked; the Redis store's schedule_if.lua sends the
pending record back for it)."""

from __future__ import annotations

import json

from duetime.errors import SchemaError, ValidationError
from duetime.record import Record
from duetime.stores.conditional import Pending
from duetime.validate import encode_payload


def merged_record(
    task_id: str, record: str, pending: Pending, changes: str, unique_ms: int, max_bytes: int
) -> str:
    """The record to write for a merge of ``changes`` (a JSON object's text) into the
    pending task's ``record``: its payload with the changes deep-merged into it
    (:func:`~duetime.triggers.periodic.deep_merge`).

    Into a task that waits, only the payload changes: its trigger, occurrence, attempts and
    traceback stay. A task that only runs gets a new occurrence (the run's outcome will not
    overwrite it) with the merged payload and its trigger. ``unique_ms`` (the call's
    ``unique_for``), when not 0, replaces the task's own. Its metadata (``meta``) stays.

    Raises:
        SchemaError: the pending record cannot be read.
        ValidationError: the merged payload is over ``max_bytes``.
    """
    try:
        stored = Record.decode(record)
    except SchemaError as exc:
        raise SchemaError(
            f"task {task_id!r}: the pending task's record cannot be merged into ({exc}); "
            "schedule it with if_exists='replace' to write over it"
        ) from None
    try:
        from duetime.triggers.periodic import deep_merge  # a merge's, imported by the first

        payload = encode_payload(deep_merge(stored.payload, json.loads(changes)), max_bytes)
    except ValidationError as exc:
        raise type(exc)(exc.field, f"merged into the pending one, {exc.problem}") from None
    unique = unique_ms or stored.unique_ms
    if pending == "waits":
        failures, trace = stored.failures, stored.traceback
        into = Record(payload, stored.trigger, stored.occurrence_ms, failures, trace, unique)
    else:
        into = Record(payload, stored.trigger, None, 0, None, unique)
    into.meta_json = stored.meta_json  # a merge keeps the pending task's metadata
    return into.encode()
