-- settle_drop: the fast path of kept "done" outcomes, for tasks neither due again nor
-- dead: the run ends and the task (record, stalls, error) goes with it. An outcome whose
-- claim lost the lease, or whose task was rescheduled meanwhile, deletes nothing (the
-- caller hands it to settle.sql). The tasks are found by their primary key: = ANY of
-- the ids, handed over as an array whose length the planner does not see (a 500-element
-- constant could tilt it to a scan of the whole type), then checked against the tokens.
-- Tokens are unique (one sequence), so a task holding one of them holds its own claim's.
-- When a run ended and a claim found the type at its global concurrency (the queue's
-- waiting), the flag is cleared and the type's workers woken: a slot is free (a queue
-- without it is read, not locked; a data-modifying WITH runs whether or not it is read).
-- Parameters: %(qid)s, %(ids)s, %(tokens)s (arrays of one length), %(now)s, %(channel)s,
-- %(type)s.
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
), freed AS (
    UPDATE queues SET waiting = false
    WHERE qid = %(qid)s AND waiting AND EXISTS (SELECT 1 FROM gone)
    RETURNING pg_notify(%(channel)s, %(now)s || ' ' || %(type)s)
)
SELECT count(*),
       CASE WHEN count(*) < cardinality(%(ids)s::text[]) THEN array_agg(id) END,
       CASE WHEN count(*) < cardinality(%(ids)s::text[]) THEN array_agg(token) END
FROM gone
