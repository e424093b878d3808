-- mark_finished: remember that a run of a task scheduled with unique_for finished (done or
-- dead), until its window has passed. Run by executemany, in the settle's transaction.
-- Parameters: ? qid, ? id, ? finished ms (the settle's now), ? until ms (now + window).
INSERT INTO duetime_finished (qid, id, finished_ms, until_ms)
VALUES (?, ?, ?, ?)
ON CONFLICT (qid, id) DO UPDATE
SET finished_ms = excluded.finished_ms,
    until_ms = excluded.until_ms
