-- cancel: remove a task whatever its state. One that no run holds a lease on is deleted;
-- one a run holds keeps its lease and the handler finishes, but the record goes, so its
-- outcome neither reschedules nor retries it (the lease's end then deletes the row). Each
-- row is in one of the two parts.
-- Parameters: %(qid)s, %(id)s.
-- Returns one row: whether there was a task to cancel.
WITH idle AS (
    DELETE FROM tasks
    WHERE qid = %(qid)s AND id = %(id)s AND token IS NULL
    RETURNING due_ms IS NOT NULL OR dead_ms IS NOT NULL OR record IS NOT NULL AS was
), busy AS (
    UPDATE tasks
    SET due_ms = NULL, dead_ms = NULL, record = NULL, stalls = 0, error = NULL
    WHERE qid = %(qid)s AND id = %(id)s AND token IS NOT NULL
      AND (due_ms IS NOT NULL OR dead_ms IS NOT NULL OR record IS NOT NULL)
    RETURNING true AS was
)
SELECT coalesce((SELECT bool_or(was) FROM idle), false)
    OR coalesce((SELECT bool_or(was) FROM busy), false)
