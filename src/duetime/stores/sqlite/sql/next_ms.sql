-- next_ms: the earliest due time and the earliest lease deadline of a type, each an
-- index seek; a worker sleeps until the smaller unless woken.
-- Parameters: :qid.
-- Returns one row: due ms or NULL, deadline ms or NULL.
SELECT
    (SELECT due_ms FROM duetime_tasks
     WHERE qid = :qid AND due_ms IS NOT NULL
     ORDER BY due_ms LIMIT 1),
    (SELECT deadline_ms FROM duetime_tasks
     WHERE qid = :qid AND deadline_ms IS NOT NULL
     ORDER BY deadline_ms LIMIT 1)
