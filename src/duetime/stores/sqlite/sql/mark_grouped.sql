-- mark_grouped: note that a queue holds (or held) a task with a group, so that its tasks
-- carry groups (0010_groups.sql); written by the schedule of such a task, once (row count
-- 1: then groups_on.sql follows).
-- Parameters: ? qid.
UPDATE duetime_queues SET grouped = 1 WHERE qid = ? AND grouped = 0
