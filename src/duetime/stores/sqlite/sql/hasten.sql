-- hasten: bring a waiting task's due time forward, unless it is due by then. Only a task
-- that waits moves: due, with no run holding a lease (see Store.hasten). The record is
-- not touched.
-- Parameters: ? new due ms, ? qid, ? id, ? new due ms.
-- Returns nothing; one row changed when the task moved.
UPDATE duetime_tasks
SET due_ms = ?
WHERE qid = ? AND id = ? AND due_ms IS NOT NULL AND token IS NULL AND due_ms > ?
