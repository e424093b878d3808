-- settle: apply the outcomes of runs whose claim still holds the lease, one statement for
-- the batch (as the Redis store's settle.lua and the SQLite store's claiming.settle):
-- the run's lease ends; a task rescheduled while it ran (due) keeps its new occurrence;
-- one cancelled while it ran (no record) stays cancelled; otherwise the op applies:
--   done     the record goes, with stalls and error;
--   next     due again at the outcome's time with its record; stalls and error cleared;
--   retry    due again at the outcome's time with its record and error;
--   dead     to the dead letters with its record and error;
--   release  due again at the outcome's time, as it was.
-- Every SET expression reads the row as it was before this statement. Listeners are
-- woken when a task made due here comes before every task due before the statement, or
-- when the earliest of those is due already: a claim running now (for it) may not see
-- this statement's tasks, and would then sleep past them; and, as settle_drop.sql, when a
-- run ended and a claim found the type at its global concurrency (a slot is free).
-- The tasks are found by their primary key (= ANY of the ids, an array whose length the
-- planner does not see), never by a scan of the whole type.
-- Parameters: %(qid)s, %(now)s, %(channel)s, %(type)s; arrays of one length: %(ids)s,
-- %(tokens)s, %(ops)s, %(dues)s, %(records)s, %(errors)s.
-- A task made due here keeps its group, whose turn comes no later than its due time
-- (_group_ready.sql).
-- Returns rows: id, token of each kept outcome, whether its row is now vacant (delete it
-- with vacate.sql), and its group (NULL: none, in a queue without groups).
WITH head AS (
    SELECT min(due_ms) AS due_ms FROM (
        SELECT due_ms FROM tasks
        WHERE qid = %(qid)s AND due_ms IS NOT NULL
        ORDER BY due_ms LIMIT 1
    ) AS h
), settled AS (
    UPDATE tasks AS t
    SET token = NULL,
        claimed_due_ms = NULL,
        deadline_ms = NULL,
        stalls = CASE WHEN t.due_ms IS NULL AND o.op IN ('done', 'next') THEN 0
                      ELSE t.stalls END,
        error = CASE WHEN t.due_ms IS NOT NULL THEN t.error
                     WHEN o.op IN ('done', 'next') THEN NULL
                     WHEN t.record IS NULL THEN t.error
                     WHEN o.op IN ('retry', 'dead') THEN o.error
                     ELSE t.error END,
        record = CASE WHEN t.due_ms IS NOT NULL THEN t.record
                      WHEN o.op = 'done' OR t.record IS NULL THEN NULL
                      WHEN o.op = 'release' THEN t.record
                      ELSE o.record END,
        due_ms = CASE WHEN t.due_ms IS NOT NULL THEN t.due_ms
                      WHEN t.record IS NOT NULL AND o.op IN ('next', 'retry', 'release')
                          THEN o.due_ms
                      END,
        dead_ms = CASE WHEN t.due_ms IS NULL AND t.record IS NOT NULL AND o.op = 'dead'
                           THEN %(now)s
                       ELSE t.dead_ms END
    FROM unnest(%(ids)s::text[], %(tokens)s::bigint[], %(ops)s::text[], %(dues)s::bigint[],
                %(records)s::text[], %(errors)s::text[])
        AS o (id, token, op, due_ms, record, error)
    WHERE t.qid = %(qid)s AND t.id = ANY (ARRAY(SELECT unnest(%(ids)s::text[])))
      AND t.id = o.id AND t.token = o.token
    RETURNING t.id, o.token, t.due_ms IS NULL AND t.dead_ms IS NULL AS vacant,
              CASE WHEN o.op IN ('next', 'retry', 'release') THEN t.due_ms END AS made_due,
              t.grp
), written AS (
    SELECT made_due AS due_ms, grp FROM settled
),
-- include _group_ready.sql
, woken AS (
    SELECT pg_notify(%(channel)s, w.due_ms || ' ' || %(type)s)
    FROM (SELECT min(made_due) AS due_ms FROM settled) AS w, head
    WHERE w.due_ms IS NOT NULL
      AND (head.due_ms IS NULL OR w.due_ms < head.due_ms OR head.due_ms <= %(now)s)
), freed AS (
    UPDATE queues SET waiting = false
    WHERE qid = %(qid)s AND waiting AND EXISTS (SELECT 1 FROM settled)
    RETURNING pg_notify(%(channel)s, %(now)s || ' ' || %(type)s)
)
SELECT id, token, vacant, grp FROM settled WHERE (SELECT count(*) FROM woken) >= 0
