-- read_wakes: the wake serials of a namespace, read by a listener whenever PRAGMA
-- data_version says that another connection committed.
-- Parameters: ? namespace.
-- Returns rows: type, wake serial, due ms of the last wake-up.
SELECT type, wake_serial, wake_due_ms FROM duetime_queues
WHERE namespace = ? AND wake_serial > 0
