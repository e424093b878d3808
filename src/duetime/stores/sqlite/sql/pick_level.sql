-- pick_level: the earliest due tasks of one priority of a queue with lanes, up to a limit (a
-- range scan of duetime_tasks_lanes), read inside the claim's write transaction. A task whose earlier run still holds the lease
-- is passed over (see pick_due.sql).
-- Parameters: ? qid, ? priority, ? horizon ms, ? limit.
-- Returns rows: rid, id, due_ms, record (NULL when missing), stalls.
SELECT rid, id, due_ms, record, stalls
FROM duetime_tasks
WHERE qid = ? AND priority = ? AND priority IS NOT NULL AND due_ms <= ?
  AND deadline_ms IS NULL
ORDER BY due_ms, id
LIMIT ?
