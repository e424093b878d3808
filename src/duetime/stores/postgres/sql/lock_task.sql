-- lock_task: one task by id, locked until the transaction ends (put_entry reads an entry
-- before it writes it).
-- Parameters: %(qid)s, %(id)s.
-- Returns no row or one: due_ms, record.
SELECT due_ms, record FROM tasks
WHERE qid = %(qid)s AND id = %(id)s
FOR UPDATE
