"""The SQL statements of the SQLite store, read once from ``sql/*.sql``."""

from __future__ import annotations

from typing import NamedTuple

from duetime.stores.statements import load_statements


class Queries(NamedTuple):
    """Every statement the store runs, one per file named as the field; each file's header
    lists its parameters and what it returns."""

    schema_exists: str
    schema_version: str
    record_migration: str
    find_queue: str
    add_queue: str
    head_due: str
    wake: str
    read_wakes: str
    schedule: str
    read_fence: str
    raise_fence: str
    cancel_idle: str
    cancel_running: str
    abort_mark: str
    abort_signal: str
    aborting: str
    revive: str
    is_dead: str
    extend_lease: str
    get: str
    list_due: str
    list_running: str
    list_dead: str
    count_states: str
    hasten: str
    active_running: str
    active_waiting: str
    next_ms: str
    vacate: str
    reap: str
    pick_due: str
    read_lanes: str
    mark_lanes: str
    due_levels: str
    pick_level: str
    lanes_on: str
    read_grouped: str
    mark_grouped: str
    groups_on: str
    group_none: str
    group_touch: str
    group_touch_rows: str
    group_touch_id: str
    group_visit: str
    group_running: str
    group_pick: str
    group_moved: str
    group_drop: str
    wait_slot: str
    move_aside: str
    take_tokens: str
    lease: str
    settle_read: str
    settle_read_one: str
    settle_drop: str
    settle_end: str
    file_dead: str
    settle_dead: str
    settle_due: str
    add_schedule_name: str
    schedule_name_owner: str
    remove_schedule_name: str
    schedule_names: str
    beat: str
    forget_workers: str
    live_workers: str
    add_count: str
    drop_counts: str
    read_counts: str
    task_types: str
    pending: str
    merge_into: str
    finished_at: str
    mark_finished: str
    trim_finished: str
    gate_read: str
    count_running: str
    gate_took: str
    gate_woken: str
    hold: str
    set_paused: str
    paused_types: str
    expired: str
    add_run: str
    runs_added: str
    trim_runs_age: str
    trim_runs_count: str
    list_runs: str


Q = load_statements("duetime.stores.sqlite", Queries, str.strip)


def repeat_row(statement: str, row: str, times: int) -> str:
    """``statement`` with its one VALUES row ``row`` repeated ``times`` times."""
    if statement.count(row) != 1:
        raise ValueError(f"the row {row!r} is not in the statement exactly once")
    return statement.replace(row, ", ".join([row] * times))
