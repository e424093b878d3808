-- settle_read: the state of one task an outcome is about, read before any write of the
-- settle (every outcome of a batch is judged against the same snapshot).
-- Parameters: ? qid, ? id.
-- Returns no row or one: rid, token (the lease holder, or NULL), whether it is due (it
-- was rescheduled while it ran), whether it is dead.
SELECT rid, token, due_ms IS NOT NULL, dead_ms IS NOT NULL
FROM duetime_tasks
WHERE qid = ? AND id = ?
