-- 0009_groups: each task's group, and each group's turn and rate (docs/flow.md, "Groups").
--
-- queues.grouped: true once a task of the queue was scheduled with a group (never
--     cleared). Only then are the queue's tasks kept by group; a queue without it writes
--     and claims as before.
-- tasks.grp: the task's group in a queue with groups ('' for a task without one, a group
--     of its own for the claim's turns, held by no group limit); NULL in a queue without.
--     Kept with the row until the task is gone or scheduled again (a retry, the next
--     occurrence of a series, an expired lease and a revived dead letter keep it; a dead
--     letter filed under an id of its own takes its task's). Each write stores NULL or ''
--     for no group as its statement sees queues.grouped; the transaction that sets it
--     (groups_on.sql) locks tasks against writes (as lanes_on.sql does), then turns
--     the queue's NULLs into ''.
-- task_groups: one row per group of a queue with groups that had due work, with
--     ready_ms: when the group's turn comes: no later than its earliest due task (every
--         write that makes a grouped task due lowers it, in the same statement, so a
--         group with due work is never missing from groups_ready), and, once a claim
--         visited the group, the later of that and the claim's time (the groups waiting
--         longer come first); NULL once a claim found nothing due in the group;
--     tat: the group's rate's theoretical arrival time (a GCRA, as queues.tat), or NULL.
--     A grouped claim (claim_grouped.sql) reads groups_ready from its start, a bounded
--     number of groups, never all of a queue's groups.
-- tasks_groups: the due tasks of the queues with groups, by group then due time: a
--     grouped claim takes each group's earliest due tasks with a range scan, never reading
--     past them into the group's backlog.
-- tasks_group_leases: the leases of the queues with groups, by group: a claim counts a
--     group's tasks holding a lease, reading no more entries than its limit.
-- A task of a queue without groups (grp NULL) is in neither index, so a type without groups
-- writes no more index entries than before.
ALTER TABLE tasks ADD COLUMN grp text COLLATE "C";
ALTER TABLE queues ADD COLUMN grouped boolean NOT NULL DEFAULT false;
CREATE TABLE task_groups (
    qid      bigint NOT NULL,
    name     text COLLATE "C" NOT NULL,
    ready_ms bigint,
    tat      double precision,
    PRIMARY KEY (qid, name)
);
CREATE INDEX groups_ready ON task_groups (qid, ready_ms, name) WHERE ready_ms IS NOT NULL;
CREATE INDEX tasks_groups ON tasks (qid, grp, due_ms, id)
    WHERE due_ms IS NOT NULL AND grp IS NOT NULL;
CREATE INDEX tasks_group_leases ON tasks (qid, grp)
    WHERE deadline_ms IS NOT NULL AND grp IS NOT NULL;
