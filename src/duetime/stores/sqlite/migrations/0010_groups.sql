-- 0010_groups: each task's group, and each group's turn and rate (docs/flow.md, "Groups").
--
-- duetime_queues.grouped: 1 once a task of the queue was scheduled with a group (never
--     cleared). A queue without it stores no group and writes nothing to duetime_groups;
--     its claims, whatever the type's limits, are claimed as before.
-- duetime_tasks.grp: the task's group in a queue with grouped, '' for a task without one;
--     NULL, meaning none, in a queue without. Kept with the row until the task is gone or
--     scheduled again (a retry, the next occurrence of a series, a release, a revive and an
--     expired lease keep it). The write that sets grouped turns the queue's NULLs into ''
--     in its transaction, and every later write stores '' for none: writes take turns in
--     SQLite, so a queue with grouped holds no NULL.
-- duetime_groups: per queue with grouped, the groups that may have due work. ready_ms is
--     a group's place in the claims' turns: at most the earliest due time of its due
--     tasks (every write that makes one of its tasks due lowers it to that due time); a
--     claim that visits the group (serves it, or finds it at its limit) sets it to
--     max(now, its earliest due time), so the groups that waited longer come first next;
--     NULL when the group has nothing due (a claim found it so). tat is the group's rate
--     (group_rate) as a GCRA time, or NULL before its first start. A claim deletes the row
--     of a group with nothing due and no rate time ahead of now.
-- duetime_groups_ready: the groups in turn order: a claim reads the first ones, never all.
-- duetime_tasks_groups: the due tasks of a queue with grouped, by group then due time: a
--     claim takes a group's earliest due tasks with a range scan, never its backlog.
-- duetime_tasks_group_leases: the running tasks of a queue with grouped, by group: a claim
--     counts a group's live leases up to its group_concurrency, no further.
-- Tasks of a queue without grouped (grp NULL) are in neither index, so a type without
-- groups writes no more index entries than before.
ALTER TABLE duetime_tasks ADD COLUMN grp TEXT;
ALTER TABLE duetime_queues ADD COLUMN grouped INTEGER NOT NULL DEFAULT 0;
CREATE TABLE duetime_groups (
    qid      INTEGER NOT NULL REFERENCES duetime_queues (qid),
    name     TEXT NOT NULL,
    ready_ms INTEGER,
    tat      REAL,
    PRIMARY KEY (qid, name)
);
CREATE INDEX duetime_groups_ready ON duetime_groups (qid, ready_ms, name)
    WHERE ready_ms IS NOT NULL;
CREATE INDEX duetime_tasks_groups ON duetime_tasks (qid, grp, due_ms, id)
    WHERE due_ms IS NOT NULL AND grp IS NOT NULL;
CREATE INDEX duetime_tasks_group_leases ON duetime_tasks (qid, grp, deadline_ms)
    WHERE deadline_ms IS NOT NULL AND grp IS NOT NULL;
