-- schedule_new: add a task only if its id does not exist yet (due, running or dead with a
-- record); an existing one is left alone. A row without a record (cancelled while it
-- runs, or a dead letter moved aside) does not count as existing, and is written over as
-- schedule.sql would.
-- Parameters: ? qid, ? id, ? due ms, ? record.
-- Row count: 1 when written, 0 when the id exists.
INSERT INTO duetime_tasks (qid, id, due_ms, record) VALUES (?, ?, ?, ?)
ON CONFLICT (qid, id) DO UPDATE
SET due_ms = excluded.due_ms,
    record = excluded.record,
    dead_ms = NULL,
    stalls = 0,
    error = NULL
WHERE record IS NULL
