-- list_running: running tasks of a type, earliest lease deadline first (an index scan of
-- tasks_running). A running task rescheduled while it runs is listed here too.
-- Parameters: %(qid)s, %(limit)s, %(offset)s.
-- Returns rows: id, score (lease deadline ms), due ms it was claimed at, record, stalls,
-- error, priority, group (NULL: none).
SELECT id, deadline_ms, claimed_due_ms, record, stalls, error, priority, grp
FROM tasks
WHERE qid = %(qid)s AND deadline_ms IS NOT NULL
ORDER BY deadline_ms, id
LIMIT %(limit)s OFFSET %(offset)s
