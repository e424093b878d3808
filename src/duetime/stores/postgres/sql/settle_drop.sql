-- settle_drop: the fast path of kept "done" outcomes, for tasks neither due again nor
-- dead: the run ends and the task (record, stalls, error) goes with it. An outcome whose
-- claim lost the lease, or whose task was rescheduled meanwhile, deletes nothing (the
-- caller hands it to settle.sql). When a run ended and a claim found the type at its
-- global concurrency (the queue's waiting), the flag is cleared and the type's workers
-- woken: a slot is free (a queue without it is read, not locked).
-- Parameters: %(qid)s, %(ids)s, %(tokens)s (arrays of one length), %(now)s, %(channel)s,
-- %(type)s.
-- Returns rows: id, token of each task deleted.
WITH dropped AS (
    DELETE FROM tasks AS t
    USING unnest(%(ids)s::text[], %(tokens)s::bigint[]) AS o (id, token)
    WHERE t.qid = %(qid)s AND t.id = o.id AND t.token = o.token
      AND t.due_ms IS NULL AND t.dead_ms IS NULL
    RETURNING t.id, t.token
), freed AS (
    UPDATE queues SET waiting = false
    WHERE qid = %(qid)s AND waiting AND EXISTS (SELECT 1 FROM dropped)
    RETURNING pg_notify(%(channel)s, %(now)s || ' ' || %(type)s)
)
SELECT id, token FROM dropped
