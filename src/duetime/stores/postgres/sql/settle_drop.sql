-- settle_drop: the fast path of kept "done" outcomes, for tasks neither due again nor
-- dead: the run ends and the task (record, stalls, error) goes with it. An outcome whose
-- claim lost the lease, or whose task was rescheduled meanwhile, deletes nothing (the
-- caller hands it to settle.sql). The tasks are found by their primary key: = ANY of
-- the ids, handed over as an array whose length the planner does not see (a 500-element
-- constant could tilt it to a scan of the whole type), then checked against the tokens.
-- Tokens are unique (one sequence), so a task holding one of them holds its own claim's.
-- Parameters: %(qid)s, %(ids)s, %(tokens)s (arrays of one length).
-- Returns one row: how many tasks were deleted; then, unless that is all of the ids (the
-- common case, which then costs the caller nothing per task), the ids and the tokens of
-- those deleted (arrays of one length, NULL when none was), else NULL, NULL.
WITH gone AS (
    DELETE FROM tasks AS t
    WHERE t.qid = %(qid)s
      AND t.id = ANY (ARRAY(SELECT unnest(%(ids)s::text[])))
      AND t.token = ANY (%(tokens)s::bigint[])
      AND t.due_ms IS NULL AND t.dead_ms IS NULL
    RETURNING t.id, t.token
)
SELECT count(*),
       CASE WHEN count(*) < cardinality(%(ids)s::text[]) THEN array_agg(id) END,
       CASE WHEN count(*) < cardinality(%(ids)s::text[]) THEN array_agg(token) END
FROM gone
