-- count_states: how many tasks of a type are due, running and dead; each count reads one
-- partial index. A task rescheduled while it runs counts as due and as running.
-- Parameters: :qid.
-- Returns one row: due, running, dead.
SELECT
    (SELECT count(*) FROM duetime_tasks
     WHERE qid = :qid AND due_ms IS NOT NULL),
    (SELECT count(*) FROM duetime_tasks
     WHERE qid = :qid AND deadline_ms IS NOT NULL),
    (SELECT count(*) FROM duetime_tasks
     WHERE qid = :qid AND dead_ms IS NOT NULL)
