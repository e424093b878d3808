-- add_queue: the queue of a (namespace, type), created on its first write (a concurrent
-- creator may win the race: its row is then read).
-- Parameters: %(namespace)s, %(type)s.
-- Returns one row: qid.
WITH added AS (
    INSERT INTO queues (namespace, type) VALUES (%(namespace)s, %(type)s)
    ON CONFLICT (namespace, type) DO NOTHING
    RETURNING qid
)
SELECT qid FROM added
UNION ALL
SELECT qid FROM queues WHERE namespace = %(namespace)s AND type = %(type)s
LIMIT 1
