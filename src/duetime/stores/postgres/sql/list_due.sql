-- list_due: due tasks of a type, earliest first (an index scan of tasks_due).
-- Parameters: %(qid)s, %(limit)s, %(offset)s.
-- Returns rows: id, score (due ms), due ms, record, stalls, error, priority, group (NULL:
-- none).
SELECT id, due_ms, due_ms, record, stalls, error, priority, grp
FROM tasks
WHERE qid = %(qid)s AND due_ms IS NOT NULL
ORDER BY due_ms, id
LIMIT %(limit)s OFFSET %(offset)s
