-- settle_dead: a kept "dead" outcome sends its task to the dead letters with its record
-- and error, unless it was cancelled while it ran (no record: it stays cancelled).
-- Parameters: ? now ms, ? record, ? error, ? rid.
-- Row count: 1 when filed, 0 when the task was cancelled.
UPDATE duetime_tasks
SET dead_ms = ?, record = ?, error = ?
WHERE rid = ? AND record IS NOT NULL
