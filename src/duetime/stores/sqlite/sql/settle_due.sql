-- settle_due: a kept "next", "retry" or "release" outcome makes its task due again,
-- unless it was cancelled while it ran (no record: it stays cancelled). next and retry
-- replace the record; retry also sets the error; release keeps both.
-- Parameters: ? due ms, ? record or NULL to keep it, ? error or NULL to keep it, ? rid.
-- Row count: 1 when due again, 0 when the task was cancelled.
UPDATE duetime_tasks
SET due_ms = ?, record = coalesce(?, record), error = coalesce(?, error)
WHERE rid = ? AND record IS NOT NULL
