-- extend_lease: push the lease deadline of running tasks, each checked against its token,
-- so that a lease that was lost (reaped, or taken over by a newer claim) stays lost.
-- The tasks are found by their primary key (= ANY of the ids, an array whose length the
-- planner does not see), never by a scan of the whole type.
-- Parameters: %(deadline)s, %(qid)s, %(ids)s, %(tokens)s (arrays of one length).
-- Returns rows: id, token of each lease that holds (and was moved).
UPDATE tasks AS t
SET deadline_ms = %(deadline)s
FROM unnest(%(ids)s::text[], %(tokens)s::bigint[]) AS c (id, token)
WHERE t.qid = %(qid)s AND t.id = ANY (ARRAY(SELECT unnest(%(ids)s::text[])))
  AND t.id = c.id AND t.token = c.token
RETURNING t.id, t.token
