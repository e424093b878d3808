-- group_pick: the earliest due tasks of one group of a queue with groups, up to a limit (a
-- range scan of duetime_tasks_groups), read inside the claim's write transaction.
-- Parameters: ? qid, ? group, ? horizon ms, ? limit.
-- Returns rows: rid, id, due_ms, record (NULL when missing), stalls.
SELECT rid, id, due_ms, record, stalls
FROM duetime_tasks
WHERE qid = ? AND grp = ? AND grp IS NOT NULL AND due_ms <= ?
ORDER BY due_ms, id
LIMIT ?
