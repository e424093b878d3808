-- beat: write a worker's heartbeat record, live until a time.
-- Parameters: ? namespace, ? id, ? record, ? until ms.
INSERT INTO duetime_workers (namespace, id, record, until_ms) VALUES (?, ?, ?, ?)
ON CONFLICT (namespace, id) DO UPDATE SET record = excluded.record, until_ms = excluded.until_ms
