-- list_runs: the newest runs of a type, of one task id if given, that finished at or after
-- %(since)s. Without an index by id, a task's runs are found by walking its type's (at
-- most the runs kept).
-- Parameters: %(qid)s, %(id)s (NULL: every id), %(since)s (ms), %(limit)s.
-- Returns rows: id, occurrence_ms, attempt, started_ms, finished_ms, outcome, error, trace,
-- worker.
SELECT id, occurrence_ms, attempt, started_ms, finished_ms, outcome, error, trace, worker
FROM runs
WHERE qid = %(qid)s AND finished_ms >= %(since)s
  AND (%(id)s::text IS NULL OR id = %(id)s::text)
ORDER BY finished_ms DESC, n DESC
LIMIT %(limit)s
