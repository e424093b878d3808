"""The SQL statements of the PostgreSQL store, read once from ``sql/*.sql``."""

from __future__ import annotations

from typing import NamedTuple

from duetime.stores.statements import load_statements


class Queries(NamedTuple):
    """Every statement the store runs, one per file named as the field; each file's header
    lists its parameters and what it returns. Held as bytes, without the comment lines, as
    psycopg takes them (it reads ``%(name)s`` placeholders anywhere in the text)."""

    schema_version: bytes
    record_migration: bytes
    settings: bytes
    now_ms: bytes
    find_queue: bytes
    add_queue: bytes
    head_due: bytes
    wake: bytes
    schedule: bytes
    read_fence: bytes
    raise_fence: bytes
    records: bytes
    cancel: bytes
    abort_mark: bytes
    aborting: bytes
    get: bytes
    lock_task: bytes
    remove_entry: bytes
    revive: bytes
    is_dead: bytes
    hasten: bytes
    extend_lease: bytes
    list_due: bytes
    list_running: bytes
    list_dead: bytes
    count_states: bytes
    active_ids: bytes
    next_ms: bytes
    reap: bytes
    vacate: bytes
    claim: bytes
    settle_drop: bytes
    settle_drop_logged: bytes
    add_runs: bytes
    list_runs: bytes
    trim_runs_age: bytes
    settle: bytes
    file_dead: bytes
    add_schedule_name: bytes
    remove_schedule_name: bytes
    schedule_names: bytes
    task_types: bytes
    beat: bytes
    live_workers: bytes
    add_counts: bytes
    read_counts: bytes
    pending: bytes
    merge_into: bytes
    insert_free: bytes
    finished_at: bytes
    mark_finished: bytes
    trim_finished: bytes
    lock_gate: bytes
    claim_gated: bytes
    mark_lanes: bytes
    lanes_on: bytes
    lock_tasks: bytes
    read_lanes: bytes
    set_paused: bytes
    paused_types: bytes
    hold: bytes
    claim_grouped: bytes
    read_groups: bytes
    mark_groups: bytes
    groups_on: bytes
    caller_identity: bytes
    enter_schema: bytes
    leave_schema: bytes


def strip(text: str) -> bytes:
    """A statement without its comment lines, as bytes."""
    lines = (line for line in text.splitlines() if not line.lstrip().startswith("--"))
    return "\n".join(lines).strip().encode()


Q = load_statements("duetime.stores.postgres", Queries, strip)
