-- head_due: the earliest due time of a queue, read before a write to tell whether the
-- write makes a task the earliest (and so wakes workers). An index seek on
-- duetime_tasks_due.
-- Parameters: ? qid.
-- Returns no row when nothing is due, else one: due_ms.
SELECT due_ms FROM duetime_tasks
WHERE qid = ? AND due_ms IS NOT NULL
ORDER BY due_ms
LIMIT 1
