-- aborting: the runs of a queue marked to abort whose token still holds the lease (the
-- running rows only, through their partial index).
-- Parameters: ? qid.
-- Returns rows: id, token.
SELECT id, token FROM duetime_tasks
WHERE qid = ? AND deadline_ms IS NOT NULL AND abort_token = token
