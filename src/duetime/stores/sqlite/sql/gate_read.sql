-- gate_read: a queue's gates, read by a claim (in its transaction) before it takes tasks.
-- Parameters: ? qid.
-- Returns one row: paused (0 or 1), hold_ms or NULL, tat or NULL.
SELECT paused, hold_ms, tat FROM duetime_queues WHERE qid = ?
