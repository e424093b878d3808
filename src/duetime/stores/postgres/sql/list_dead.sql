-- list_dead: dead letters of a type, oldest first (an index scan of tasks_dead).
-- Parameters: %(qid)s, %(limit)s, %(offset)s.
-- Returns rows: id, score (time of death ms), the same again as due ms, record, stalls,
-- error, priority, group (NULL: none).
SELECT id, dead_ms, dead_ms, record, stalls, error, priority, grp
FROM tasks
WHERE qid = %(qid)s AND dead_ms IS NOT NULL
ORDER BY dead_ms, id
LIMIT %(limit)s OFFSET %(offset)s
