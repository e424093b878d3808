-- get: one task by id, in whatever state.
-- Parameters: %(qid)s, %(id)s.
-- Returns no row or one: id, due_ms, token, claimed_due_ms, deadline_ms, dead_ms, record,
-- stalls, error, priority, group (NULL: none).
SELECT id, due_ms, token, claimed_due_ms, deadline_ms, dead_ms, record, stalls, error,
    priority, grp
FROM tasks
WHERE qid = %(qid)s AND id = %(id)s
