-- settle_read_one: settle_read.sql for one outcome whose task id JSON cannot carry intact
-- (it holds a NUL character, where SQLite's JSON functions end text).
-- Parameters: ? qid, ? id.
-- Returns no row or one: rid, token (the lease holder, or NULL), whether it is due (it
-- was rescheduled while it ran), whether it is dead.
SELECT rid, token, due_ms IS NOT NULL, dead_ms IS NOT NULL
FROM duetime_tasks
WHERE qid = ? AND id = ?
