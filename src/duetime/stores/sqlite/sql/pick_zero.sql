-- pick_zero: pick_due for a queue with priorities: the earliest due tasks of priority 0
-- (duetime_tasks_due, passing over the due tasks of other priorities in its range).
-- Parameters: ? qid, ? horizon ms, ? limit.
-- Returns rows: rid, id, due_ms, record (NULL when missing), stalls.
SELECT rid, id, due_ms, record, stalls
FROM duetime_tasks
WHERE qid = ? AND due_ms <= ? AND priority = 0
ORDER BY due_ms, id
LIMIT ?
