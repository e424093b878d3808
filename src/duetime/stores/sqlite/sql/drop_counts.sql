-- drop_counts: delete the counts of the minutes that start before a time.
-- Parameters: ? namespace, ? oldest minute start ms kept.
DELETE FROM duetime_minutes WHERE namespace = ? AND minute_ms < ?
