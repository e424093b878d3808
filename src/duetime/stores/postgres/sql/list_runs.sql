-- list_runs: a page of a queue's run history rows, newest first, of those whose base is at
-- or after %(since)s and that come before (%(added)s, %(n)s) (see
-- migrations/0007_runs.sql for the columns).
-- Parameters: %(qid)s, %(since)s (ms), %(added)s, %(n)s, %(rows)s.
-- Returns rows: added, n, base_ms, keep, worker, batch, id, occurrence_ms, attempt,
-- started_ms, outcome, error, trace, result.
SELECT added, n, base_ms, keep, worker, batch, id, occurrence_ms, attempt, started_ms,
       outcome, error, trace, result
FROM runs
WHERE qid = %(qid)s AND (added, n) < (%(added)s, %(n)s) AND base_ms >= %(since)s
ORDER BY added DESC, n DESC
LIMIT %(rows)s
