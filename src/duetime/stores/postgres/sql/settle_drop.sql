-- settle_drop: the fast path of kept "done" outcomes, for tasks neither due again nor
-- dead: the run ends and the task (record, stalls, error) goes with it. An outcome whose
-- claim lost the lease, or whose task was rescheduled meanwhile, deletes nothing (the
-- caller hands it to settle.sql).
-- Parameters: %(qid)s, %(ids)s, %(tokens)s (arrays of one length).
-- Returns rows: id, token of each task deleted.
DELETE FROM tasks AS t
USING unnest(%(ids)s::text[], %(tokens)s::bigint[]) AS o (id, token)
WHERE t.qid = %(qid)s AND t.id = o.id AND t.token = o.token
  AND t.due_ms IS NULL AND t.dead_ms IS NULL
RETURNING t.id, t.token
