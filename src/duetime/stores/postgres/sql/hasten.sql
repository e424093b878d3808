-- hasten: bring a waiting task's due time forward, unless it is due by then. Only a task
-- that waits moves: due, with no run holding a lease (see Store.hasten). The record is
-- not touched; its group's turn comes no later than the new due time (_group_ready.sql).
-- Parameters: %(due)s, %(qid)s, %(id)s.
-- Returns one row when the task moved.
WITH written AS (
    UPDATE tasks
    SET due_ms = %(due)s
    WHERE qid = %(qid)s AND id = %(id)s AND due_ms IS NOT NULL AND token IS NULL
      AND due_ms > %(due)s
    RETURNING due_ms, grp
),
-- include _group_ready.sql
SELECT true FROM written
