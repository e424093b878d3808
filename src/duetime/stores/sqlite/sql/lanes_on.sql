-- lanes_on: the queue's tasks written before it had lanes (priority NULL) become tasks of
-- priority 0 in duetime_tasks_lanes (0009_priorities.sql); run once, by the write that sets
-- lanes (mark_lanes.sql), in its transaction.
-- Parameters: ? qid.
UPDATE duetime_tasks SET priority = 0 WHERE qid = ? AND priority IS NULL
