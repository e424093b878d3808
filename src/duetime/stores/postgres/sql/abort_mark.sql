-- abort_mark: mark the run that holds a task's lease to abort (its token). Marking it again
-- changes nothing.
-- Parameters: %(qid)s, %(id)s.
-- Returns one row when a run holds the task's lease, else none.
UPDATE tasks
SET abort_token = token
WHERE qid = %(qid)s AND id = %(id)s AND token IS NOT NULL
RETURNING token
