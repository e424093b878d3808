-- finished_at: when the last run of a task scheduled with unique_for finished, while its
-- window has not passed.
-- Parameters: %(qid)s, %(id)s, %(now)s.
-- Returns no row or one: finished_ms.
SELECT finished_ms FROM finished
WHERE qid = %(qid)s AND id = %(id)s AND until_ms > %(now)s
