-- records: the records stored under some ids of a queue (for schedule's only_new: an id
-- that was not written is returned unless it holds this very task).
-- Parameters: %(qid)s, %(ids)s.
-- Returns rows: id, record.
SELECT id, record FROM tasks WHERE qid = %(qid)s AND id = ANY(%(ids)s::text[])
