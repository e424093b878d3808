-- head_due: the earliest due time of a queue, read before a write to tell whether it must
-- wake workers: when the write makes a task the earliest, or when the earliest is due
-- already (a claim running for it may not see the write, and would sleep past it). An
-- index seek on tasks_due.
-- Parameters: %(qid)s.
-- Returns one row: due_ms (NULL when nothing is due), and the database's clock in ms.
SELECT (SELECT due_ms FROM tasks
        WHERE qid = %(qid)s AND due_ms IS NOT NULL
        ORDER BY due_ms
        LIMIT 1),
       (extract(epoch FROM clock_timestamp()) * 1000)::bigint
