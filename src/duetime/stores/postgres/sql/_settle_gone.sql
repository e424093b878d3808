-- _settle_gone: the first CTEs of settle_drop.sql and settle_drop_logged.sql, after their
-- WITH. "gone": the tasks of the kept outcomes deleted, found by their primary key (= ANY
-- of the ids, handed over as an array whose length the planner does not see: a
-- 500-element constant could tilt it to a scan of the whole type), then checked against
-- the tokens (unique: one sequence, so a task holding one of them holds its own claim's).
-- "freed": when a run ended and a claim had found the type at its global concurrency (the
-- queue's waiting), the flag cleared and the type's workers woken, a slot being free (a
-- queue without it is read, not locked; a data-modifying WITH runs whether or not it is
-- read).
gone AS (
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
