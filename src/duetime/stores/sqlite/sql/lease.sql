-- lease: move one claimed task from due to running (run by executemany over a claim's
-- batch). The picks pass over an id whose earlier run still holds a lease (it was
-- rescheduled while it ran): an id never runs twice at once.
-- Parameters: ? token, ? due ms it is claimed at, ? lease deadline ms, ? rid.
UPDATE duetime_tasks
SET due_ms = NULL, token = ?, claimed_due_ms = ?, deadline_ms = ?
WHERE rid = ?
