-- pick_level: the earliest due tasks of one priority other than 0, up to a limit (a range
-- scan of duetime_tasks_lanes), read inside the claim's write transaction.
-- Parameters: ? qid, ? priority (not 0), ? horizon ms, ? limit.
-- Returns rows: rid, id, due_ms, record (NULL when missing), stalls.
SELECT rid, id, due_ms, record, stalls
FROM duetime_tasks
WHERE qid = ? AND priority = ? AND priority <> 0 AND due_ms <= ?
ORDER BY due_ms, id
LIMIT ?
