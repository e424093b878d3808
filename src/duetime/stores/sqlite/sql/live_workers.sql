-- live_workers: the records of the workers live at a time, by worker id.
-- Parameters: ? namespace, ? now ms.
-- Returns rows: record.
SELECT record FROM duetime_workers WHERE namespace = ? AND until_ms >= ? ORDER BY id
