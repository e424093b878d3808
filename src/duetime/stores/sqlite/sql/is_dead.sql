-- is_dead: whether an id is in the dead letters (with or without a record).
-- Parameters: ? qid, ? id.
-- Returns one row when it is, none otherwise.
SELECT 1 FROM duetime_tasks
WHERE qid = ? AND id = ? AND dead_ms IS NOT NULL
