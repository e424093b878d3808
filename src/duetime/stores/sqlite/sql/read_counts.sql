-- read_counts: every count of the minutes that start at a time or later.
-- Parameters: ? namespace, ? minute start ms.
-- Returns rows: minute start ms, type, what was counted, n.
SELECT minute_ms, type, what, n FROM duetime_minutes WHERE namespace = ? AND minute_ms >= ?
