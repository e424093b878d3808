-- spawn: with a kept outcome, also make a task due with its own id and record (a cron
-- tick handed off to run on its own). An existing id is moved and takes the record; its
-- other parts (a lease, a dead letter, stalls, error) stay, as in the Redis store.
-- Parameters: ? qid, ? id, ? due ms, ? record.
INSERT INTO duetime_tasks (qid, id, due_ms, record) VALUES (?, ?, ?, ?)
ON CONFLICT (qid, id) DO UPDATE
SET due_ms = excluded.due_ms, record = excluded.record
