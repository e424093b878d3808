-- schedule: add tasks, or move and update them when their id exists.
--
-- Scheduling an id again starts a new occurrence: it leaves the dead letters, and its
-- stall count and error are cleared (its failures live in its record, replaced here). A
-- run of the same id still in progress keeps its lease (token, claimed_due_ms and
-- deadline_ms are untouched) and its outcome will not overwrite the new occurrence.
-- Running it twice gives the same result.
--
-- The VALUES row is repeated to write many tasks with one statement (ids distinct):
-- ops.py runs it with SCHEDULE_ROWS rows per statement, and with one for the rest; for
-- only_new, one row with "WHERE record IS NULL" appended (an id that holds a task is
-- left alone).
-- Parameters, per task: ? qid, ? id, ? due ms, ? record, ? priority, ? group (NULL in a
-- queue without groups, see 0010_groups.sql). (Plain ? only:
-- CPython 3.12 before 3.12.4 warns about ?NNN with positional parameters, and 3.14
-- refuses it.)
INSERT INTO duetime_tasks (qid, id, due_ms, record, priority, grp)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (qid, id) DO UPDATE
SET due_ms = excluded.due_ms,
    record = excluded.record,
    priority = excluded.priority,
    grp = excluded.grp,
    dead_ms = NULL,
    stalls = 0,
    error = NULL
