-- list_due: due tasks of a type, earliest first (an index scan of duetime_tasks_due).
-- Parameters: ? qid, ? limit, ? offset.
-- Returns rows: id, score (due ms), due ms, record, stalls, error, priority, group.
SELECT id, due_ms, due_ms, record, stalls, error, priority, grp
FROM duetime_tasks
WHERE qid = ? AND due_ms IS NOT NULL
ORDER BY due_ms, id
LIMIT ? OFFSET ?
