-- pending: what an id holds, for a write on conditions (schedule_if).
-- Parameters: ? qid, ? id.
-- Returns no row or one: rid, due_ms, claimed_due_ms (NULL unless a run holds the lease),
-- record.
SELECT rid, due_ms, claimed_due_ms, record
FROM duetime_tasks
WHERE qid = ? AND id = ?
