-- insert_free: write a task as a new occurrence (as schedule.sql) unless its id holds a
-- pending task (one with a record that waits or runs): for a conditional write that found
-- no row, where another transaction may have added one since (the conflict waits for it).
-- Its group as in schedule.sql.
-- Parameters: %(qid)s, %(id)s, %(due)s, %(record)s, %(priority)s, %(group)s.
-- Returns one row (id) when written, none when a pending task holds the id.
WITH written AS (
    INSERT INTO tasks AS t (qid, id, due_ms, record, priority, grp)
    VALUES (%(qid)s, %(id)s, %(due)s, %(record)s,
            CASE WHEN %(priority)s <> 0 OR (SELECT lanes FROM queues WHERE qid = %(qid)s)
                 THEN %(priority)s::smallint END,
            CASE WHEN %(group)s <> '' OR (SELECT grouped FROM queues WHERE qid = %(qid)s)
                 THEN %(group)s::text END)
    ON CONFLICT (qid, id) DO UPDATE
    SET due_ms = excluded.due_ms,
        record = excluded.record,
        priority = excluded.priority,
        grp = excluded.grp,
        dead_ms = NULL,
        stalls = 0,
        error = NULL
    WHERE t.record IS NULL OR (t.due_ms IS NULL AND t.token IS NULL)
    RETURNING t.id, t.due_ms, t.grp
),
-- include _group_ready.sql
SELECT id FROM written
