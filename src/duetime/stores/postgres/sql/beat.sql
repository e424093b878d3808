-- beat: write a worker's heartbeat record, live until a time, and delete the records that
-- lapsed before now.
-- Parameters: %(namespace)s, %(id)s, %(record)s, %(until_ms)s, %(now_ms)s.
WITH lapsed AS (
    DELETE FROM workers
    WHERE namespace = %(namespace)s AND until_ms < %(now_ms)s AND id <> %(id)s
)
INSERT INTO workers (namespace, id, record, until_ms)
VALUES (%(namespace)s, %(id)s, %(record)s, %(until_ms)s)
ON CONFLICT (namespace, id) DO UPDATE SET record = excluded.record, until_ms = excluded.until_ms
