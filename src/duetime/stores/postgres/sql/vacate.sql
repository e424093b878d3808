-- vacate: delete rows that are no longer due, running or dead (a lease ended after the
-- task was cancelled, or a run ended that left nothing behind).
-- Parameters: %(qid)s, %(ids)s.
DELETE FROM tasks
WHERE qid = %(qid)s AND id = ANY(%(ids)s::text[])
  AND due_ms IS NULL AND token IS NULL AND dead_ms IS NULL
