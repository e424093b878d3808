-- finished_at: when the last run of a task scheduled with unique_for finished, while its
-- window has not passed.
-- Parameters: ? qid, ? id, ? now ms.
-- Returns no row or one: finished_ms.
SELECT finished_ms
FROM duetime_finished
WHERE qid = ? AND id = ? AND until_ms > ?
