-- settle_drop: the fast path of a kept "done" outcome for a task neither due nor dead:
-- the run ends and the task (record, stalls, error) goes with it.
-- Parameters: ? rid.
DELETE FROM duetime_tasks WHERE rid = ?
