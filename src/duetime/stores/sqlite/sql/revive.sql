-- revive: move a dead task back to due, with a new record (the caller resets its
-- failures) or the one it has; its stall count and error are cleared. A dead letter
-- without a record is left alone (the caller reports it).
-- Parameters: ? due ms, ? new record or NULL to keep it, ? qid, ? id.
-- Row count: 1 when the task was dead (with a record) and is due again, else 0.
UPDATE duetime_tasks
SET due_ms = ?, record = coalesce(?, record), dead_ms = NULL, stalls = 0, error = NULL
WHERE qid = ? AND id = ? AND dead_ms IS NOT NULL AND record IS NOT NULL
