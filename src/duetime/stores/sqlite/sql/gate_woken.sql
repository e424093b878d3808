-- gate_woken: a settle that ended a run of a type some claim found at its global
-- concurrency wakes the type's workers (a slot is free) and clears the flag, in one
-- statement; nothing happens when the flag is not set.
-- Parameters: ? due ms (the wake-up's time: now), ? qid.
-- Returns one row when it woke: the queue's new wake serial.
UPDATE duetime_queues
SET waiting = 0, wake_serial = wake_serial + 1, wake_due_ms = ?
WHERE qid = ? AND waiting = 1
RETURNING wake_serial
