-- aborting: the runs of a queue marked to abort whose token still holds the lease (the
-- running rows only, through the tasks_running index).
-- Parameters: %(qid)s.
-- Returns rows: id, token.
SELECT id, token FROM tasks
WHERE qid = %(qid)s AND deadline_ms IS NOT NULL AND abort_token = token
