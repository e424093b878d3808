-- list_runs: a page of a queue's run history rows, newest first, of those whose base is at
-- or after :since (see migrations/0008_runs.sql for the columns).
-- Parameters: :qid, :since (ms), :before (list rows added before this count), :rows.
-- Returns rows: added, base_ms, keep, worker, batch, id, occurrence_ms, attempt,
-- started_ms, outcome, error, trace, result.
SELECT added, base_ms, keep, worker, batch, id, occurrence_ms, attempt, started_ms,
       outcome, error, trace, result
FROM duetime_runs
WHERE qid = :qid AND added < :before AND base_ms >= :since
ORDER BY added DESC
LIMIT :rows
