-- move_aside: send a due task that cannot be run (no record, or an id that is not UTF-8
-- text) to the dead letters with the reason (it is never dropped silently).
-- Parameters: ? now ms, ? reason, ? rid.
UPDATE duetime_tasks
SET due_ms = NULL, dead_ms = ?, error = ?
WHERE rid = ?
