-- merge_into: write a merged record into a task that waits, and its due time; its
-- occurrence (stalls, error, and a lease if it also runs) is left as it is.
-- Parameters: %(qid)s, %(id)s, %(record)s, %(due)s.
UPDATE tasks
SET record = %(record)s, due_ms = %(due)s
WHERE qid = %(qid)s AND id = %(id)s
