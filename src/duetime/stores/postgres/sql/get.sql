-- get: one task by id, in whatever state.
-- Parameters: %(qid)s, %(id)s.
-- Returns no row or one: id, due_ms, token, claimed_due_ms, deadline_ms, dead_ms, record,
-- stalls, error, priority.
SELECT id, due_ms, token, claimed_due_ms, deadline_ms, dead_ms, record, stalls, error,
    priority
FROM tasks
WHERE qid = %(qid)s AND id = %(id)s
