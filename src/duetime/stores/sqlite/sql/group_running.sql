-- group_running: how many tasks of one group hold a live lease, counted up to a most (a
-- range scan of duetime_tasks_group_leases that stops there): a group at its
-- group_concurrency costs as many rows as that, whatever else it holds.
-- Parameters: :qid, :group, :now ms, :most.
-- Returns one row: the count (at most :most).
SELECT count(*) FROM duetime_tasks
WHERE rid IN (
    SELECT rid FROM duetime_tasks
    WHERE qid = :qid AND grp = :group AND grp IS NOT NULL AND deadline_ms > :now
    LIMIT :most
)
