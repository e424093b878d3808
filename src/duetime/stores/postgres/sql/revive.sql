-- revive: move a dead task back to due, with a new record (the caller resets its
-- failures) or the one it has; its stall count and error are cleared. A dead letter
-- without a record is left alone (the caller reports it). It keeps its group, whose turn
-- comes no later than its due time (_group_ready.sql).
-- Parameters: %(due)s, %(record)s (NULL keeps it), %(qid)s, %(id)s.
-- Returns one row when the task was dead (with a record) and is due again: whether it
-- had a record (always true).
WITH written AS (
    UPDATE tasks
    SET due_ms = %(due)s, record = coalesce(%(record)s, record), dead_ms = NULL, stalls = 0,
        error = NULL
    WHERE qid = %(qid)s AND id = %(id)s AND dead_ms IS NOT NULL AND record IS NOT NULL
    RETURNING due_ms, grp
),
-- include _group_ready.sql
SELECT true FROM written
