"""Live workers: each worker writes a heartbeat record to the store every few seconds
(``worker/heartbeat.py``), and the record lapses a few beats after the last, so a worker
that dies drops off the list by itself and one that stops leaves it at once. This module
says what a record holds and reads it back."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from duetime.stores.base import Store
from duetime.stores.capabilities import TELEMETRY, use

log = logging.getLogger(__name__)

#: How often a worker writes its record, and how long one lasts without the next.
BEAT_SECONDS = 5.0
LAPSE_SECONDS = 15.0


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """One live worker, as its last heartbeat told.

    Attributes:
        id: the worker's id, ``<host>-<pid>-<random>``.
        host, pid: where it runs.
        started: when it started.
        version: the duetime version it runs.
        namespace: the namespace it works in.
        types: the task types it runs.
        running: how many handlers of each type it runs now.
        last_claim: when a claim last brought it tasks (None: not yet).
        seen: when it wrote this record; it lapses LAPSE_SECONDS later.
    """

    id: str
    host: str
    pid: int
    started: datetime
    version: str
    namespace: str
    types: tuple[str, ...]
    running: Mapping[str, int]
    last_claim: datetime | None
    seen: datetime


async def read_workers(store: Store, now_ms: int) -> list[WorkerInfo]:
    """The workers live at ``now_ms``, by id; a record that cannot be read is left out."""
    found = []
    for raw in await use(store, TELEMETRY).telemetry.workers(now_ms):
        try:
            found.append(_info(json.loads(raw)))
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("a worker record in the store cannot be read (%s): %.200r", exc, raw)
    return found


async def seen_since(store: Store, since_ms: int, task_type: str | None = None) -> bool:
    """Whether a worker of the store's namespace that runs ``task_type`` (any worker, when
    None) was live at some moment since ``since_ms``: its record lapses LAPSE_SECONDS after
    its last beat, or when it stops (:class:`~duetime.features.telemetry.heartbeat.Heartbeat`),
    and stays readable as lapsed until the next beat of any worker forgets it. A worker of
    other types (``duetime worker app --type other``) does not count. One read."""
    for raw in await use(store, TELEMETRY).telemetry.workers(since_ms):
        if task_type is None:
            return True
        try:
            types = json.loads(raw)["types"]
        except (ValueError, KeyError, TypeError):
            continue  # unreadable: read_workers warns about it
        if isinstance(types, list) and task_type in types:
            return True
    return False


def _info(doc: dict[str, Any]) -> WorkerInfo:
    last = doc.get("last_claim_ms")
    return WorkerInfo(
        id=str(doc["id"]),
        host=str(doc["host"]),
        pid=int(doc["pid"]),
        started=_time(doc["started_ms"]),
        version=str(doc["version"]),
        namespace=str(doc["namespace"]),
        types=tuple(str(t) for t in doc["types"]),
        running={str(k): int(v) for k, v in dict(doc["running"]).items()},
        last_claim=None if last is None else _time(last),
        seen=_time(doc["seen_ms"]),
    )


def _time(ms: Any) -> datetime:
    return datetime.fromtimestamp(float(ms) / 1000, UTC)
