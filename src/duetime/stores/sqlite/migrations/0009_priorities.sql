-- 0009_priorities: each task's priority (docs/flow.md, "Priorities").
--
-- duetime_queues.lanes: 1 once a task of the queue was scheduled with a priority other than
--     0 (never cleared): only then does a claim look at priorities. A queue without it is
--     claimed as before, by duetime_tasks_due alone.
-- duetime_tasks.priority: -100 to 100 in a queue with lanes (0 included); NULL, meaning 0,
--     in a queue without. Kept with the row until the task is gone or scheduled again (a
--     retry, the next occurrence of a series and a revived dead letter keep it). The write
--     that sets lanes turns the queue's NULLs into 0 in the same transaction, and every
--     later write of the queue writes 0 for 0: writes take turns in SQLite, so a queue with
--     lanes holds no NULL.
-- duetime_tasks_lanes: the due tasks of the queues with lanes, by priority then due time: a
--     claim finds the levels present with one seek each (the largest below the last) and
--     takes each level's earliest due tasks with a range scan, never reading a task due
--     later than the claim's horizon nor one of another level. A task of a queue without
--     lanes (NULL) is not in it, so a type without priorities writes no more index entries
--     than before.
ALTER TABLE duetime_tasks ADD COLUMN priority INTEGER;
ALTER TABLE duetime_queues ADD COLUMN lanes INTEGER NOT NULL DEFAULT 0;
CREATE INDEX duetime_tasks_lanes ON duetime_tasks (qid, priority, due_ms, id)
    WHERE due_ms IS NOT NULL AND priority IS NOT NULL;
