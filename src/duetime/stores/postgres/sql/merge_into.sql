-- merge_into: write a merged record into a task that waits, and its due time; its
-- occurrence (stalls, error, and a lease if it also runs) and its group are left as they
-- are (its group's turn comes no later than the new due time: _group_ready.sql).
-- Parameters: %(qid)s, %(id)s, %(record)s, %(due)s.
WITH written AS (
    UPDATE tasks
    SET record = %(record)s, due_ms = %(due)s
    WHERE qid = %(qid)s AND id = %(id)s
    RETURNING due_ms, grp
),
-- include _group_ready.sql
SELECT count(*) FROM written
