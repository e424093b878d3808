-- list_runs: the newest runs of a type, of one task id if given, that finished at or after
-- :since. Without an index by id, a task's runs are found by walking its type's (at most
-- the runs kept).
-- Parameters: :qid, :id (NULL: every id), :since (ms), :limit.
-- Returns rows: id, occurrence_ms, attempt, started_ms, finished_ms, outcome, error, trace,
-- worker.
SELECT id, occurrence_ms, attempt, started_ms, finished_ms, outcome, error, trace, worker
FROM duetime_runs
WHERE qid = :qid AND finished_ms >= :since AND (:id IS NULL OR id = :id)
ORDER BY finished_ms DESC, rid DESC
LIMIT :limit
