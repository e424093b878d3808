-- trim_finished: forget the finishes of a queue whose window has passed (run by the settle
-- that remembers new ones, so the table holds about what counts).
-- Parameters: %(qid)s, %(now)s.
DELETE FROM finished
WHERE qid = %(qid)s AND until_ms <= %(now)s
