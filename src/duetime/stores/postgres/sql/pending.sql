-- pending: what an id holds, for a write on conditions (schedule_if), locked until the
-- transaction ends: a settle or another conditional write of the id waits for it.
-- Parameters: %(qid)s, %(id)s.
-- Returns no row or one: due_ms, claimed_due_ms (NULL unless a run holds the lease),
-- record.
SELECT due_ms, claimed_due_ms, record FROM tasks
WHERE qid = %(qid)s AND id = %(id)s
FOR UPDATE
