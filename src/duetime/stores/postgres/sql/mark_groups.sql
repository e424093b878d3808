-- mark_groups: note that a queue holds (or held) a task with a group, so that its tasks are
-- kept by group (0009_groups.sql), first in the transaction of groups_on.sql (a claim that
-- holds the queue's row ends first; writes of tasks still see it unset until the
-- transaction commits, and lock_tasks.sql follows before any task is read).
-- Parameters: %(qid)s.
-- Returns a row when it set grouped (then lock_tasks.sql and groups_on.sql follow), none
-- when it was set.
UPDATE queues SET grouped = true WHERE qid = %(qid)s AND NOT grouped RETURNING qid
