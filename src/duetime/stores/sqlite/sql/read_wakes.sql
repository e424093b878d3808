-- read_wakes: the wake and abort serials of a namespace, read by a listener whenever
-- PRAGMA data_version says that another connection committed.
-- Parameters: ? namespace.
-- Returns rows: type, wake serial, due ms of the last wake-up (NULL before the first),
-- abort serial.
SELECT type, wake_serial, wake_due_ms, abort_serial FROM duetime_queues
WHERE namespace = ? AND (wake_serial > 0 OR abort_serial > 0)
