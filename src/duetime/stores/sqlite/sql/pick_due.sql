-- pick_due: the earliest due tasks of a type, up to a limit (an index range scan of
-- duetime_tasks_due), read inside the claim's write transaction.
-- Parameters: ? qid, ? horizon ms (now, plus the claim's look-ahead), ? limit.
-- Returns rows: rid, id, due_ms, record (NULL when missing), stalls.
SELECT rid, id, due_ms, record, stalls
FROM duetime_tasks
WHERE qid = ? AND due_ms <= ?
ORDER BY due_ms, id
LIMIT ?
