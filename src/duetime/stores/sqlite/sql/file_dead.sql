-- file_dead: file a dead letter under an id of its own (a failed occurrence of a periodic
-- task, whose series goes on under the task's id). An existing id takes the dead letter's
-- time, record and error, and keeps its other parts.
-- Parameters: ? qid, ? id, ? now ms, ? record, ? error.
INSERT INTO duetime_tasks (qid, id, dead_ms, record, error)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT (qid, id) DO UPDATE
SET dead_ms = excluded.dead_ms, record = excluded.record, error = excluded.error
