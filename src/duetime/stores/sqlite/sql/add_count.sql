-- add_count: add to one count of a minute.
-- Parameters: ? namespace, ? minute start ms, ? type, ? what was counted, ? how many.
INSERT INTO duetime_minutes (namespace, minute_ms, type, what, n) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (namespace, minute_ms, type, what) DO UPDATE SET n = n + excluded.n
