-- 0008_priorities: each task's priority (docs/flow.md, "Priorities").
--
-- tasks.priority: -100 to 100, 0 unless the task was scheduled with another; kept with the
--     row until the task is gone or scheduled again (a retry, the next occurrence of a
--     series and a revived dead letter keep it).
-- queues.lanes: true once a task of the queue was scheduled with a priority other than 0
--     (never cleared): only then does a claim look at priorities. A queue without it is
--     claimed as before, by tasks_due alone.
-- tasks_lanes: the due tasks of a priority other than 0, by priority then due time: a
--     claim finds the levels present with one index probe each (the largest below the
--     last) and takes each level's earliest due tasks with a range scan, never reading a
--     task due later than the claim's horizon. Tasks of priority 0 are not in it, so a type
--     without priorities writes no more index entries than before.
ALTER TABLE tasks ADD COLUMN priority smallint NOT NULL DEFAULT 0;
ALTER TABLE queues ADD COLUMN lanes boolean NOT NULL DEFAULT false;
CREATE INDEX tasks_lanes ON tasks (qid, priority, due_ms, id)
    WHERE due_ms IS NOT NULL AND priority <> 0;
