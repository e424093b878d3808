-- list_dead: dead letters of a type, oldest first (an index scan of duetime_tasks_dead).
-- Parameters: ? qid, ? limit, ? offset.
-- Returns rows: id, score (time of death ms), the same again as due ms, record, stalls,
-- error, priority, group.
SELECT id, dead_ms, dead_ms, record, stalls, error, priority, grp
FROM duetime_tasks
WHERE qid = ? AND dead_ms IS NOT NULL
ORDER BY dead_ms, id
LIMIT ? OFFSET ?
