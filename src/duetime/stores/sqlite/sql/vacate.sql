-- vacate: delete a row that is no longer due, running or dead (its lease ended after it
-- was cancelled, or its run is done). Run by executemany over the rows a write touched.
-- Parameters: ? rid.
DELETE FROM duetime_tasks
WHERE rid = ? AND due_ms IS NULL AND token IS NULL AND dead_ms IS NULL
