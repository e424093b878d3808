-- trim_finished: forget the finishes of a queue whose window has passed (run by the settle
-- that remembers new ones, so the table holds about what counts).
-- Parameters: ? qid, ? now ms.
DELETE FROM duetime_finished
WHERE qid = ? AND until_ms <= ?
