-- task_types: the task types of a namespace that hold a task (due, running or dead). Queue
-- rows are never deleted, so a type whose tasks all ended has a queue and no task: the
-- EXISTS reads one entry of the index by id.
-- Parameters: ? namespace.
-- Returns rows: type, sorted.
SELECT q.type
FROM duetime_queues AS q
WHERE q.namespace = ?
  AND EXISTS (SELECT 1 FROM duetime_tasks AS t WHERE t.qid = q.qid)
ORDER BY q.type
