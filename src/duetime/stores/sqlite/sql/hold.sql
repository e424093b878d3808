-- hold: no claim starts a task of the queue before a time, unless it is held longer
-- already (a handler's RateLimited).
-- Parameters: ? until ms, ? qid, ? until ms.
UPDATE duetime_queues SET hold_ms = ? WHERE qid = ? AND (hold_ms IS NULL OR hold_ms < ?)
