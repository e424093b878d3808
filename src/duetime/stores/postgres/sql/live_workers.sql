-- live_workers: the records of the workers live at a time, by worker id.
-- Parameters: %(namespace)s, %(now_ms)s.
-- Returns rows: record.
SELECT record FROM workers
WHERE namespace = %(namespace)s AND until_ms >= %(now_ms)s
ORDER BY id
