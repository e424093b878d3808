-- lease: move one claimed task from due to running (run by executemany over a claim's
-- batch). Claiming an id whose earlier run still holds a lease (it was rescheduled while
-- it ran) takes the lease over: that run's outcomes become stale.
-- Parameters: ? token, ? due ms it is claimed at, ? lease deadline ms, ? rid.
UPDATE duetime_tasks
SET due_ms = NULL, token = ?, claimed_due_ms = ?, deadline_ms = ?
WHERE rid = ?
