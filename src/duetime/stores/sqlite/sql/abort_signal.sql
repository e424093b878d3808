-- abort_signal: tell listeners in other processes that a run of the type was marked to
-- abort.
-- Parameters: ? qid.
-- Returns one row: the queue's new abort serial.
UPDATE duetime_queues
SET abort_serial = abort_serial + 1
WHERE qid = ?
RETURNING abort_serial
