-- merge_into: write a merged record into a task that waits, and its due time; its
-- occurrence (stalls, error, and a lease if it also runs) is left as it is.
-- Parameters: ? record, ? due ms, ? rid.
UPDATE duetime_tasks
SET record = ?, due_ms = ?
WHERE rid = ?
