-- is_dead: whether an id is in the dead letters (with or without a record).
-- Parameters: %(qid)s, %(id)s.
-- Returns one row when it is, none otherwise.
SELECT 1 FROM tasks WHERE qid = %(qid)s AND id = %(id)s AND dead_ms IS NOT NULL
