-- active_running: the ids of a type's running tasks, earliest lease deadline first (an
-- index scan of duetime_tasks_running); with active_waiting, Store.active_ids.
-- Parameters: ? qid, ? limit.
-- Returns rows: id.
SELECT id
FROM duetime_tasks
WHERE qid = ? AND deadline_ms IS NOT NULL
ORDER BY deadline_ms, id
LIMIT ?
