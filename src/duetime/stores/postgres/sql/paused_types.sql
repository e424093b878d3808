-- paused_types: the paused task types of a namespace.
-- Parameters: %(namespace)s.
-- Returns rows: type.
SELECT type FROM queues WHERE namespace = %(namespace)s AND paused
