-- read_counts: every count of the minutes that start at a time or later.
-- Parameters: %(namespace)s, %(since_ms)s.
-- Returns rows: minute start ms, type, what was counted, n.
SELECT minute_ms, type, what, n FROM minutes
WHERE namespace = %(namespace)s AND minute_ms >= %(since_ms)s
