-- claim: lease the earliest due tasks of a type, up to a limit, in one statement, unless the
-- type is paused or held (its queue's gates: then it takes none; a type with a rate or a
-- global concurrency is claimed by claim_gated.sql). Rows
-- another claim holds are skipped (FOR UPDATE SKIP LOCKED), so claimers of one type do
-- not wait for each other. Each picked task moves from due to running with a new
-- fencing token and the lease deadline; claiming an id whose earlier run still holds a
-- lease (it was rescheduled while it ran) takes the lease over, and that run's outcomes
-- become stale. A due row without a record cannot run: it goes to the dead letters with
-- the reason (never dropped silently). The rows to update are found by their primary
-- key (= ANY of the picked ids, an array whose length the planner does not see), never
-- by a join the planner could turn into a scan of the whole type.
-- Parameters: %(qid)s, %(horizon)s (now, plus the claim's look-ahead), %(limit)s,
-- %(deadline)s, %(now)s.
-- Which tasks, highest priority first in a queue with lanes: _claim_pick.sql.
-- Returns rows: id, token (NULL when moved aside), stalls, due ms it is claimed at,
-- record, priority. Not in order: the caller sorts them.
WITH RECURSIVE allowed AS (
    SELECT CASE WHEN q.paused OR q.hold_ms > %(now)s THEN 0 ELSE %(limit)s END AS n
    FROM queues AS q WHERE q.qid = %(qid)s
),
-- include _claim_pick.sql
UPDATE tasks AS t
SET due_ms = NULL,
    token = CASE WHEN t.record IS NULL THEN t.token ELSE nextval('tokens') END,
    claimed_due_ms = CASE WHEN t.record IS NULL THEN t.claimed_due_ms ELSE t.due_ms END,
    deadline_ms = CASE WHEN t.record IS NULL THEN t.deadline_ms ELSE %(deadline)s END,
    dead_ms = CASE WHEN t.record IS NULL THEN %(now)s ELSE t.dead_ms END,
    error = CASE WHEN t.record IS NULL THEN 'no record for this id: moved aside'
                 ELSE t.error END
WHERE t.qid = %(qid)s AND t.id = ANY (ARRAY(SELECT id FROM picked))
RETURNING t.id, CASE WHEN t.record IS NULL THEN NULL ELSE t.token END, t.stalls,
          t.claimed_due_ms, t.record, t.priority
