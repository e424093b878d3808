-- runs_added: how many runs a queue's history has taken in all (0 for none yet).
-- Parameters: ? qid.
-- Returns one row: the count.
SELECT coalesce(max(added), 0) FROM duetime_runs WHERE qid = ?
