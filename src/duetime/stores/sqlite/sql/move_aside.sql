-- move_aside: send a due task without a record to the dead letters with the reason, since
-- there is nothing to run (it is never dropped silently).
-- Parameters: ? now ms, ? rid.
UPDATE duetime_tasks
SET due_ms = NULL, dead_ms = ?, error = 'no record for this id: moved aside'
WHERE rid = ?
