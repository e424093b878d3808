-- trim_runs_count: drop a queue's rows whose runs are all older than its newest `keep`
-- (an index range; the oldest row left may hold some, which readers skip).
-- Parameters: ? qid, ? the queue's runs in all minus keep.
DELETE FROM duetime_runs WHERE qid = ? AND added <= ?
