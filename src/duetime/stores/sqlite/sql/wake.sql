-- wake: tell listeners in other processes that a task became the earliest of its type.
-- Parameters: ? due ms, ? qid.
-- Returns one row: the queue's new wake serial.
UPDATE duetime_queues
SET wake_serial = wake_serial + 1, wake_due_ms = ?
WHERE qid = ?
RETURNING wake_serial
