-- hold: no claim starts a task of the queue before a time, unless it is held longer
-- already (a handler's RateLimited).
-- Parameters: %(until)s, %(qid)s.
UPDATE queues SET hold_ms = %(until)s
WHERE qid = %(qid)s AND (hold_ms IS NULL OR hold_ms < %(until)s)
