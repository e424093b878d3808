-- active_waiting: the ids of a type's due tasks that no run holds a lease on, earliest
-- first (an index scan of duetime_tasks_due); with active_running, Store.active_ids.
-- Parameters: ? qid, ? limit.
-- Returns rows: id.
SELECT id
FROM duetime_tasks
WHERE qid = ? AND due_ms IS NOT NULL AND token IS NULL
ORDER BY due_ms, id
LIMIT ?
