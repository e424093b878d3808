-- group_none: the turn of the group '' (the tasks without a group) of a queue that just
-- got groups: ready at the queue's earliest due time (an index seek of duetime_tasks_due),
-- or no row when nothing is due.
-- Parameters: ? qid, ? qid.
INSERT INTO duetime_groups (qid, name, ready_ms)
SELECT ?, '', min(due_ms) FROM duetime_tasks WHERE qid = ? AND due_ms IS NOT NULL
GROUP BY qid
ON CONFLICT (qid, name) DO NOTHING
