-- next_ms: the earliest due time and the earliest lease deadline of a type, each an
-- index seek, and its queue's gates (what the worker's next look depends on); for a type
-- with a global concurrency (%(count_running)s), also the tasks holding a lease.
-- Parameters: %(qid)s, %(count_running)s (boolean).
-- Returns one row: due ms or NULL, deadline ms or NULL, paused, hold_ms or NULL, tat or
-- NULL, the tasks holding a lease (0 unless counted).
SELECT
    (SELECT due_ms FROM tasks WHERE qid = %(qid)s AND due_ms IS NOT NULL
     ORDER BY due_ms LIMIT 1),
    (SELECT deadline_ms FROM tasks WHERE qid = %(qid)s AND deadline_ms IS NOT NULL
     ORDER BY deadline_ms LIMIT 1),
    q.paused, q.hold_ms, q.tat,
    (SELECT count(*) FROM tasks
     WHERE qid = %(qid)s AND deadline_ms IS NOT NULL AND %(count_running)s)
FROM queues AS q
WHERE q.qid = %(qid)s
