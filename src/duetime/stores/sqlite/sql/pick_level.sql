-- pick_level: the earliest due tasks of one priority of a queue with lanes, up to a limit (a
-- range scan of duetime_tasks_lanes), read inside the claim's write transaction.
-- Parameters: ? qid, ? priority, ? horizon ms, ? limit.
-- Returns rows: rid, id, due_ms, record (NULL when missing), stalls.
SELECT rid, id, due_ms, record, stalls
FROM duetime_tasks
WHERE qid = ? AND priority = ? AND priority IS NOT NULL AND due_ms <= ?
ORDER BY due_ms, id
LIMIT ?
