-- extend_lease: push the lease deadline of one running task, checked against its token,
-- so that a lease that was lost (reaped, or taken over by a newer claim) stays lost.
-- Parameters: ? new deadline ms, ? qid, ? id, ? token.
-- Row count: 1 when the token still holds the lease, 0 when the lease is lost.
UPDATE duetime_tasks
SET deadline_ms = ?
WHERE qid = ? AND id = ? AND token = ?
