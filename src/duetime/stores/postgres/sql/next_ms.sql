-- next_ms: the earliest due time and the earliest lease deadline of a type, each an
-- index seek; a worker sleeps until the smaller unless woken.
-- Parameters: %(qid)s.
-- Returns one row: due ms or NULL, deadline ms or NULL.
SELECT
    (SELECT due_ms FROM tasks WHERE qid = %(qid)s AND due_ms IS NOT NULL
     ORDER BY due_ms LIMIT 1),
    (SELECT deadline_ms FROM tasks WHERE qid = %(qid)s AND deadline_ms IS NOT NULL
     ORDER BY deadline_ms LIMIT 1)
