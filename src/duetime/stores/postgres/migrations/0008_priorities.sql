-- 0008_priorities: each task's priority (docs/flow.md, "Priorities").
--
-- queues.lanes: true once a task of the queue was scheduled with a priority other than 0
--     (never cleared): only then does a claim look at priorities. A queue without it is
--     claimed as before, by tasks_due alone.
-- tasks.priority: -100 to 100 in a queue with lanes (0 included); NULL, meaning 0, in a
--     queue without. Kept with the row until the task is gone or scheduled again (a retry,
--     the next occurrence of a series and a revived dead letter keep it). Each write
--     stores 0 or NULL for 0 as its statement sees queues.lanes. The transaction that sets
--     lanes (lanes_on.sql) first locks tasks against writes (SHARE: it waits for the
--     writes in progress, and a write waits for it), then turns the queue's NULLs into 0:
--     a write locks the table before it takes its snapshot, so it either ended before or
--     sees lanes set, and a queue with lanes holds no NULL.
-- tasks_lanes: the due tasks of the queues with lanes, by priority then due time: a claim
--     finds the levels present with one index probe each (the largest below the last) and
--     takes each level's earliest due tasks with a range scan, never reading a task due
--     later than the claim's horizon nor one of another level. A task of a queue without
--     lanes (NULL) is not in it, so a type without priorities writes no more index entries
--     than before.
ALTER TABLE tasks ADD COLUMN priority smallint;
ALTER TABLE queues ADD COLUMN lanes boolean NOT NULL DEFAULT false;
CREATE INDEX tasks_lanes ON tasks (qid, priority, due_ms, id)
    WHERE due_ms IS NOT NULL AND priority IS NOT NULL;
