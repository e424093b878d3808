-- active_ids: the ids of a type's running tasks (earliest lease deadline first), then of
-- its due tasks that no run holds a lease on (earliest first), each once; one statement,
-- so one snapshot.
-- Parameters: %(qid)s, %(limit)s.
-- Returns rows: id.
SELECT id FROM (
    (SELECT id, 0 AS part, deadline_ms AS score FROM tasks
     WHERE qid = %(qid)s AND deadline_ms IS NOT NULL
     ORDER BY deadline_ms, id LIMIT %(limit)s)
    UNION ALL
    (SELECT id, 1 AS part, due_ms AS score FROM tasks
     WHERE qid = %(qid)s AND due_ms IS NOT NULL AND token IS NULL
     ORDER BY due_ms, id LIMIT %(limit)s)
) AS active
ORDER BY part, score, id
LIMIT %(limit)s
