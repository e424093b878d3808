-- spawn: with a kept outcome, also make a task due with its own id and record (a cron
-- tick handed off to run on its own). As schedule does, it starts a new occurrence: an
-- existing id is moved, takes the record, leaves the dead letters, and its stall count and
-- error are cleared (a lease in progress is kept).
-- Parameters: ? qid, ? id, ? due ms, ? record.
INSERT INTO duetime_tasks (qid, id, due_ms, record) VALUES (?, ?, ?, ?)
ON CONFLICT (qid, id) DO UPDATE
SET due_ms = excluded.due_ms,
    record = excluded.record,
    dead_ms = NULL,
    stalls = 0,
    error = NULL
