-- claim_gated: claim.sql for a type with a rate or a global concurrency, after lock_gate.sql
-- (the same transaction). It takes what the gates allow (the arithmetic of
-- duetime/stores/gating.py): none while paused or held; under a global concurrency, the
-- slots left by the tasks holding a lease; under a rate (a GCRA), the starts its time
-- allows. Then it moves the rate's time on by the tasks it started, and notes when the
-- type is at its global concurrency (waiting: the settle that ends a run wakes the
-- workers).
-- Parameters: %(qid)s, %(horizon)s, %(limit)s, %(deadline)s, %(now)s, %(interval)s (the
-- rate's ms between starts, 0: none), %(burst)s (>= 1), %(max_running)s (0: none).
-- Priorities as in claim.sql; the rows to update are found by their primary key, as there
-- (a join with the picked ids could be planned as a scan of every task of the type).
-- Returns rows: as claim.sql.
WITH RECURSIVE
-- include _gate_allowed.sql
,
-- include _claim_pick.sql
, leased AS (
    UPDATE tasks AS t
    SET due_ms = NULL,
        token = CASE WHEN t.record IS NULL THEN t.token ELSE nextval('tokens') END,
        claimed_due_ms = CASE WHEN t.record IS NULL THEN t.claimed_due_ms ELSE t.due_ms END,
        deadline_ms = CASE WHEN t.record IS NULL THEN t.deadline_ms ELSE %(deadline)s END,
        dead_ms = CASE WHEN t.record IS NULL THEN %(now)s ELSE t.dead_ms END,
        error = CASE WHEN t.record IS NULL THEN 'no record for this id: moved aside'
                     ELSE t.error END
    WHERE t.qid = %(qid)s AND t.id = ANY (ARRAY(SELECT id FROM picked))
    RETURNING t.id, CASE WHEN t.record IS NULL THEN NULL ELSE t.token END AS token, t.stalls,
              t.claimed_due_ms, t.record, t.priority
), took AS (
    UPDATE queues AS q
    SET tat = CASE WHEN %(interval)s > 0 AND s.n > 0 THEN a.base + s.n * %(interval)s
                   ELSE q.tat END,
        waiting = q.waiting OR (%(max_running)s > 0 AND a.running + s.n >= %(max_running)s)
    FROM allowed AS a, (SELECT count(token) AS n FROM leased) AS s
    WHERE q.qid = %(qid)s
)
SELECT id, token, stalls, claimed_due_ms, record, priority FROM leased
