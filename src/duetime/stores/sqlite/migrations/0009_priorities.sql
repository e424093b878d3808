-- 0009_priorities: each task's priority (docs/flow.md, "Priorities").
--
-- duetime_tasks.priority: -100 to 100, 0 unless the task was scheduled with another; kept
--     with the row until the task is gone or scheduled again (a retry, the next occurrence
--     of a series and a revived dead letter keep it).
-- duetime_queues.lanes: 1 once a task of the queue was scheduled with a priority other than
--     0 (never cleared): only then does a claim look at priorities. A queue without it is
--     claimed as before, by duetime_tasks_due alone.
-- duetime_tasks_lanes: the due tasks of a priority other than 0, by priority then due time:
--     a claim finds the levels present with one seek each (the largest below the last) and
--     takes each level's earliest due tasks with a range scan, never reading a task due
--     later than the claim's horizon. Tasks of priority 0 are not in it, so a type without
--     priorities writes no more index entries than before.
ALTER TABLE duetime_tasks ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE duetime_queues ADD COLUMN lanes INTEGER NOT NULL DEFAULT 0;
CREATE INDEX duetime_tasks_lanes ON duetime_tasks (qid, priority, due_ms, id)
    WHERE due_ms IS NOT NULL AND priority <> 0;
