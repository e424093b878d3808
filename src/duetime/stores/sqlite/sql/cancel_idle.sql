-- cancel_idle: remove a task that no run holds a lease on, whether due or dead.
-- Parameters: ? qid, ? id.
-- Returns the deleted row, if any: whether it was a task (due, dead or with a record).
DELETE FROM duetime_tasks
WHERE qid = ? AND id = ? AND token IS NULL
RETURNING due_ms IS NOT NULL OR dead_ms IS NOT NULL OR record IS NOT NULL
