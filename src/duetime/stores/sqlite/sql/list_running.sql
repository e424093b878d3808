-- list_running: running tasks of a type, earliest lease deadline first (an index scan of
-- duetime_tasks_running). A running task rescheduled while it runs is listed here too.
-- Parameters: ? qid, ? limit, ? offset.
-- Returns rows: id, score (lease deadline ms), due ms it was claimed at, record, stalls,
-- error, priority, group.
SELECT id, deadline_ms, claimed_due_ms, record, stalls, error, priority, grp
FROM duetime_tasks
WHERE qid = ? AND deadline_ms IS NOT NULL
ORDER BY deadline_ms, id
LIMIT ? OFFSET ?
