-- groups_on: the queue's tasks written before it had groups (grp NULL) become tasks
-- without a group ('', in tasks_groups and tasks_group_leases: 0009_groups.sql), and that
-- group's turn comes no later than the earliest of them due (_group_ready.sql); after
-- mark_groups.sql, in its transaction.
-- Parameters: %(qid)s.
WITH written AS (
    UPDATE tasks SET grp = '' WHERE qid = %(qid)s AND grp IS NULL
    RETURNING due_ms, grp
),
-- include _group_ready.sql
SELECT count(*) FROM written
