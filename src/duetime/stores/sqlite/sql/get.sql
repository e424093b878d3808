-- get: one task by id, in whatever state.
-- Parameters: ? qid, ? id.
-- Returns no row or one: id, due_ms, token, claimed_due_ms, deadline_ms, dead_ms, record,
-- stalls, error, priority, group.
SELECT id, due_ms, token, claimed_due_ms, deadline_ms, dead_ms, record, stalls, error,
    priority, grp
FROM duetime_tasks
WHERE qid = ? AND id = ?
