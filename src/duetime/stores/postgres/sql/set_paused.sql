-- set_paused: pause (true) or resume (false) a queue, and wake its workers either way (at
-- commit), so that a paused type stops within a wake-up and a resumed one starts.
-- Parameters: %(paused)s, %(qid)s, %(channel)s, %(payload)s ("<ms> <type>").
-- Returns one row: whether it changed.
WITH changed AS (
    UPDATE queues SET paused = %(paused)s
    WHERE qid = %(qid)s AND paused <> %(paused)s
    RETURNING qid
)
SELECT EXISTS (SELECT 1 FROM changed), pg_notify(%(channel)s, %(payload)s)
