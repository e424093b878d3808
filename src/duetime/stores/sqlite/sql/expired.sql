-- expired: the leases the reap (reap.sql) is about to end, with its verdict on each (the
-- same as reap.sql's), read first in the claim's transaction when the claim records the
-- crashed runs in the type's history.
-- Parameters: :qid, :now (ms), :max_stalls, :at_most_once (0 or 1), :batch.
-- Returns rows: id, record, stalls (before this one), claimed due ms, verdict.
SELECT id, record, stalls, claimed_due_ms,
       CASE WHEN due_ms IS NOT NULL OR record IS NULL THEN 'ended'
            WHEN :at_most_once THEN 'at_most_once'
            WHEN stalls + 1 > :max_stalls THEN 'stalled_out'
            ELSE 'requeue' END
FROM duetime_tasks
WHERE qid = :qid AND deadline_ms <= :now
ORDER BY deadline_ms, id
LIMIT :batch
