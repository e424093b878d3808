-- paused_types: the paused task types of a namespace, sorted.
-- Parameters: ? namespace.
-- Returns rows: type.
SELECT type FROM duetime_queues WHERE namespace = ? AND paused = 1 ORDER BY type
