-- abort_mark: mark the run that holds a task's lease to abort (its token). Marking it again
-- changes nothing.
-- Parameters: ? qid, ? id.
-- Row count: 1 when a run holds the task's lease, else 0.
UPDATE duetime_tasks
SET abort_token = token
WHERE qid = ? AND id = ? AND token IS NOT NULL
