-- mark_groups: note that a queue holds (or held) a task with a group, so that its tasks are
-- kept by group (0009_groups.sql), in the transaction of groups_on.sql, after
-- lock_tasks.sql.
-- Parameters: %(qid)s.
-- Returns a row when it set grouped (then groups_on.sql follows), none when it was set.
UPDATE queues SET grouped = true WHERE qid = %(qid)s AND NOT grouped RETURNING qid
