-- remove_entry: remove an expiring entry that is live (due after now) and that no run
-- holds a lease on (a live entry someone runs was rescheduled while it ran: it keeps the
-- lease, and loses its record, as cancel.sql does).
-- Parameters: %(qid)s, %(id)s, %(now)s.
-- Returns one row: whether the entry was live.
WITH idle AS (
    DELETE FROM tasks
    WHERE qid = %(qid)s AND id = %(id)s AND due_ms > %(now)s AND token IS NULL
    RETURNING 1
), busy AS (
    UPDATE tasks
    SET due_ms = NULL, dead_ms = NULL, record = NULL, stalls = 0, error = NULL
    WHERE qid = %(qid)s AND id = %(id)s AND due_ms > %(now)s AND token IS NOT NULL
    RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM idle) OR EXISTS (SELECT 1 FROM busy)
