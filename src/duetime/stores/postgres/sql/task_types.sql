-- task_types: the task types of a namespace that hold a task (due, running or dead). Queue
-- rows are never deleted, so a type whose tasks all ended has a queue and no task.
-- Parameters: %(namespace)s.
-- Returns rows: type, sorted.
SELECT q.type FROM queues AS q
WHERE q.namespace = %(namespace)s AND EXISTS (SELECT 1 FROM tasks AS t WHERE t.qid = q.qid)
ORDER BY q.type
