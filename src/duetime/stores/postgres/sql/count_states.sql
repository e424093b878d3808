-- count_states: how many tasks of a type are due, running and dead; each count reads one
-- partial index. A task rescheduled while it runs counts as due and as running.
-- Parameters: %(qid)s.
-- Returns one row: due, running, dead.
SELECT
    (SELECT count(*) FROM tasks WHERE qid = %(qid)s AND due_ms IS NOT NULL),
    (SELECT count(*) FROM tasks WHERE qid = %(qid)s AND deadline_ms IS NOT NULL),
    (SELECT count(*) FROM tasks WHERE qid = %(qid)s AND dead_ms IS NOT NULL)
